#include "core/json.h"

#include <algorithm>
#include <vector>

namespace vkllm {
namespace {

using json = nlohmann::ordered_json;
// ordered_json's object: a vector of (key, value) whose emplace looks the key up linearly first.
using Members = json::object_t::Container;

// Builds the tree as nlohmann's DOM parser does (a stack of open containers, values appended to the
// innermost), refusing the container that would open past max_depth before it exists.
class BoundedBuilder : public nlohmann::json_sax<json> {
public:
    BoundedBuilder(std::string_view subject, int max_depth) : subject_(subject), max_depth_(max_depth) {}

    json take() { return std::move(root_); }

    bool null() override { return add(nullptr); }
    bool boolean(bool value) override { return add(value); }
    bool number_integer(number_integer_t value) override { return add(value); }
    bool number_unsigned(number_unsigned_t value) override { return add(value); }
    bool number_float(number_float_t value, const string_t&) override { return add(value); }
    bool string(string_t& value) override { return add(std::move(value)); }
    bool binary(binary_t&) override { return false; }  // text JSON has none
    bool start_object(std::size_t) override { return open(json::object()); }
    bool key(string_t& key) override {
        key_ = std::move(key);
        return true;
    }
    bool end_object() override {
        check_unique_keys(*open_.back());
        open_.pop_back();
        return true;
    }
    bool start_array(std::size_t) override { return open(json::array()); }
    bool end_array() override {
        open_.pop_back();
        return true;
    }
    bool parse_error(std::size_t byte, const std::string&, const nlohmann::detail::exception& error) override {
        // nlohmann's what(): "[json.exception.parse_error.101] parse error at line 1, column 2: DETAIL", or
        // "[json.exception.out_of_range.406] number overflow parsing '1e999'".
        std::string_view detail = error.what();
        if (const size_t tag_end = detail.find("] "); tag_end != std::string_view::npos) detail.remove_prefix(tag_end + 2);
        if (detail.starts_with("parse error")) detail.remove_prefix(std::min(detail.size(), detail.find(": ") + 2));
        fail("{} is not valid JSON at byte {}: {}", subject_, byte, detail);
    }

private:
    bool open(json&& container) {
        if (int(open_.size()) >= max_depth_) fail("{} nests JSON deeper than {} levels", subject_, max_depth_);
        open_.push_back(&place(std::move(container)));
        return true;
    }

    bool add(json&& value) {
        place(std::move(value));
        return true;
    }

    // Where a new value goes: the root, the innermost array's end, or the innermost object's end
    // under the key just read (appended without a lookup: check_unique_keys runs when it closes).
    json& place(json&& value) {
        if (open_.empty()) {
            root_ = std::move(value);
            return root_;
        }
        json& parent = *open_.back();
        if (parent.is_array()) return parent.get_ref<json::array_t&>().emplace_back(std::move(value));
        Members& members = parent.get_ref<json::object_t&>();
        return members.emplace_back(std::move(key_), std::move(value)).second;
    }

    // Small objects compare their keys pairwise; wider ones sort views of them: O(n log n) where
    // ordered_map's checked inserts would be O(n^2).
    void check_unique_keys(const json& object) const {
        const Members& members = object.get_ref<const json::object_t&>();
        const auto refuse = [&](std::string_view key) {
            fail("{} holds the key \"{}\" twice in one object", subject_, key);
        };
        if (members.size() <= 8) {
            for (size_t i = 1; i < members.size(); ++i)
                for (size_t j = 0; j < i; ++j)
                    if (members[i].first == members[j].first) refuse(members[i].first);
            return;
        }
        std::vector<std::string_view> keys;
        keys.reserve(members.size());
        for (const auto& [key, value] : members) keys.push_back(key);
        std::ranges::sort(keys);
        if (const auto repeated = std::ranges::adjacent_find(keys); repeated != keys.end()) refuse(*repeated);
    }

    std::string_view subject_;
    int max_depth_;
    json root_;
    std::vector<json*> open_;  // the containers not yet closed, outermost first
    std::string key_;          // the key of the object member being read
};

}  // namespace

json parse_json(std::string_view text, std::string_view subject, int max_depth) {
    BoundedBuilder builder(subject, max_depth);
    // Errors reach parse_error, which throws; a false return can only come from binary(), unreachable.
    json::sax_parse(text.begin(), text.end(), &builder);
    return builder.take();
}

std::optional<json> try_parse_json(std::string_view text, int max_depth) {
    try {
        return parse_json(text, "the text", max_depth);
    } catch (const Error&) {
        return std::nullopt;
    }
}

}  // namespace vkllm
