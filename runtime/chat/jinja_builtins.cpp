#include "chat/jinja_builtins.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "core/error.h"
#include "tokenizer/unicode.h"

namespace vkllm::chat::jinja {

void Where::fail(std::string_view message) const { vkllm::fail("{}:{}: {}", name, line, message); }

namespace {

using tokenizer::append_utf8;
using tokenizer::decode_utf8;

std::string encode(std::span<const char32_t> cpts) {
    std::string out;
    for (char32_t cpt : cpts) append_utf8(out, cpt);
    return out;
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

std::string strip(std::string_view s, bool left, bool right, const Value& chars) {
    auto strip_char = [&](char c) {
        return chars.is_string() ? chars.as_string().find(c) != std::string::npos : is_space(c);
    };
    size_t begin = 0, end = s.size();
    while (left && begin < end && strip_char(s[begin])) ++begin;
    while (right && end > begin && strip_char(s[end - 1])) --end;
    return std::string(s.substr(begin, end - begin));
}

std::string replace(const std::string& s, const std::string& from, const std::string& to, int64_t count) {
    if (from.empty()) return s;
    std::string out;
    size_t at = 0;
    for (int64_t done = 0; count < 0 || done < count; ++done) {
        const size_t next = s.find(from, at);
        if (next == std::string::npos) break;
        out += s.substr(at, next - at) + to;
        at = next + from.size();
    }
    return out + s.substr(at);
}

std::string change_case(const std::string& s, int mode) {  // 0 lower, 1 upper, 2 capitalize, 3 title
    std::string out = s;
    bool word_start = true;
    for (size_t i = 0; i < out.size(); ++i) {
        const char c = out[i];
        const bool upper = mode == 1 || (mode == 2 && i == 0) || (mode == 3 && word_start);
        out[i] = char(upper ? std::toupper(uint8_t(c)) : std::tolower(uint8_t(c)));
        word_start = !std::isalnum(uint8_t(c));
    }
    return out;
}

Value split(const std::string& s, const Value& separator) {
    List parts;
    if (!separator.is_string()) {  // Python split(): runs of whitespace, no empty parts
        size_t at = 0;
        while (at < s.size()) {
            while (at < s.size() && is_space(s[at])) ++at;
            size_t end = at;
            while (end < s.size() && !is_space(s[end])) ++end;
            if (end > at) parts.emplace_back(s.substr(at, end - at));
            at = end;
        }
        return Value(std::move(parts));
    }
    const std::string& sep = separator.as_string();
    size_t at = 0;
    for (size_t next; !sep.empty() && (next = s.find(sep, at)) != std::string::npos; at = next + sep.size())
        parts.emplace_back(s.substr(at, next - at));
    parts.emplace_back(s.substr(at));
    return Value(std::move(parts));
}

Value string_method(const std::string& self, const std::string& method, CallArgs& args, const Where& where) {
    auto text_arg = [&](size_t i, const char* name) {
        const Value v = args.get(i, name);
        if (!v.is_string()) where.fail(fmt::format("str.{}() needs a string argument", method));
        return v.as_string();
    };
    if (method == "strip") return Value(strip(self, true, true, args.get(0, "chars")));
    if (method == "lstrip") return Value(strip(self, true, false, args.get(0, "chars")));
    if (method == "rstrip") return Value(strip(self, false, true, args.get(0, "chars")));
    if (method == "lower") return Value(change_case(self, 0));
    if (method == "upper") return Value(change_case(self, 1));
    if (method == "capitalize") return Value(change_case(self, 2));
    if (method == "title") return Value(change_case(self, 3));
    if (method == "startswith") return Value(self.starts_with(text_arg(0, "prefix")));
    if (method == "endswith") return Value(self.ends_with(text_arg(0, "suffix")));
    if (method == "split") return split(self, args.get(0, "sep"));
    if (method == "replace")
        return Value(replace(self, text_arg(0, "old"), text_arg(1, "new"), args.get(2, "count", Value(-1)).as_int()));
    if (method == "find") {
        const size_t at = self.find(text_arg(0, "sub"));
        return Value(at == std::string::npos ? int64_t(-1) : int64_t(decode_utf8(self.substr(0, at)).size()));
    }
    where.fail(fmt::format("strings have no method '{}'", method));
}

Value dict_method(const Value& self, const std::string& method, CallArgs& args) {
    const Dict& dict = self.as_dict();
    if (method == "get") {
        const Value key = args.get(0, "key");
        const Value* found = key.is_string() ? dict.find(key.as_string()) : nullptr;
        return found ? *found : args.get(1, "default", Value::none());
    }
    List out;
    for (const auto& [key, value] : dict.items) {
        if (method == "keys") out.emplace_back(key);
        else if (method == "values") out.push_back(value);
        else out.emplace_back(List{Value(key), value});
    }
    return Value(std::move(out));
}

Value bound(Value self, std::string method, const Where& where) {
    const std::string& name = where.name;
    const int line = where.line;
    return Value(Function([self = std::move(self), method = std::move(method), &name, line](CallArgs& args) {
        const Where at{name, line};
        if (self.is_string()) return string_method(self.as_string(), method, args, at);
        return dict_method(self, method, args);
    }));
}

}  // namespace

Value get_attribute(const Value& object, const std::string& name, const Where& where) {
    if (object.is_undefined()) where.fail(fmt::format("'{}' is undefined", object.as_string()));
    if (object.is_dict()) {
        const Dict& dict = object.as_dict();
        if (!dict.is_namespace && (name == "get" || name == "items" || name == "keys" || name == "values"))
            return bound(object, name, where);
        if (const Value* found = dict.find(name)) return *found;
        return Value::undefined(name);
    }
    // Python's str has these methods and no other attribute: `text.content` is undefined, as in jinja2.
    static const std::set<std::string, std::less<>> string_methods = {
        "strip", "lstrip", "rstrip", "lower", "upper", "capitalize", "title", "startswith", "endswith", "split", "replace", "find"};
    if (object.is_string() && string_methods.contains(name)) return bound(object, name, where);
    return Value::undefined(name);
}

namespace {

// Python's index normalisation: negative counts from the end; nullopt when out of range.
std::optional<size_t> list_index(const Value& key, size_t size) {
    if (key.kind() != Value::Kind::Int && key.kind() != Value::Kind::Bool) return std::nullopt;
    int64_t index = key.as_int();
    if (index < 0) index += int64_t(size);
    if (index < 0 || index >= int64_t(size)) return std::nullopt;
    return size_t(index);
}

}  // namespace

Value get_item(const Value& object, const Value& key, const Where& where) {
    if (object.is_undefined()) where.fail(fmt::format("'{}' is undefined", object.as_string()));
    if (object.is_dict()) {
        const Value* found = key.is_string() ? object.as_dict().find(key.as_string()) : nullptr;
        if (found) return *found;
        return key.is_string() ? get_attribute(object, key.as_string(), where) : Value::undefined(key.str());
    }
    if (object.is_list()) {
        const List& list = object.as_list();
        if (auto index = list_index(key, list.size())) return list[*index];
        return Value::undefined(key.str());
    }
    if (object.is_string()) {
        if (key.is_string()) return bound(object, key.as_string(), where);
        const std::vector<char32_t> cpts = decode_utf8(object.as_string());
        if (auto index = list_index(key, cpts.size())) return Value(encode(std::span(cpts).subspan(*index, 1)));
        return Value::undefined(key.str());
    }
    return Value::undefined(key.str());
}

Value get_slice(const Value& object, const Value& start, const Value& stop, const Value& step_value, const Where& where) {
    const int64_t step = step_value.is_undefined() || step_value.is_none() ? 1 : step_value.as_int();
    if (step == 0) where.fail("slice step cannot be zero");
    auto slice_indices = [&](int64_t size) {
        auto bound_of = [&](const Value& v, int64_t fallback) {
            if (v.is_undefined() || v.is_none()) return fallback;
            int64_t i = v.as_int();
            if (i < 0) i += size;
            return step > 0 ? std::clamp<int64_t>(i, 0, size) : std::clamp<int64_t>(i, -1, size - 1);
        };
        const int64_t begin = bound_of(start, step > 0 ? 0 : size - 1);
        const int64_t end = bound_of(stop, step > 0 ? size : -1);
        std::vector<size_t> indices;
        for (int64_t i = begin; step > 0 ? i < end : i > end; i += step) indices.push_back(size_t(i));
        return indices;
    };
    if (object.is_list()) {
        const List& list = object.as_list();
        List out;
        for (size_t i : slice_indices(int64_t(list.size()))) out.push_back(list[i]);
        return Value(std::move(out));
    }
    if (object.is_string()) {
        const std::vector<char32_t> cpts = decode_utf8(object.as_string());
        std::vector<char32_t> out;
        for (size_t i : slice_indices(int64_t(cpts.size()))) out.push_back(cpts[i]);
        return Value(encode(out));
    }
    where.fail(fmt::format("a {} value cannot be sliced", object.type_name()));
}

List iterate(const Value& value, const Where& where) {
    switch (value.kind()) {
        case Value::Kind::Undefined: return {};
        case Value::Kind::List: return value.as_list();
        case Value::Kind::Dict: {
            List keys;
            for (const auto& item : value.as_dict().items) keys.emplace_back(item.first);
            return keys;
        }
        case Value::Kind::String: {
            List chars;
            for (char32_t cpt : decode_utf8(value.as_string())) chars.emplace_back(encode(std::span(&cpt, 1)));
            return chars;
        }
        default: where.fail(fmt::format("a {} value is not iterable", value.type_name()));
    }
}

bool contains(const Value& container, const Value& item, const Where& where) {
    if (container.is_string()) {
        if (!item.is_string()) where.fail("'in <string>' needs a string on the left");
        return container.as_string().find(item.as_string()) != std::string::npos;
    }
    if (container.is_dict()) return item.is_string() && container.as_dict().find(item.as_string());
    for (const Value& element : iterate(container, where))
        if (element == item) return true;
    return false;
}

int compare(const Value& a, const Value& b, const Where& where) {
    if (a.is_number() && b.is_number()) {
        const double x = a.as_float(), y = b.as_float();
        return x < y ? -1 : x > y ? 1 : 0;
    }
    if (a.is_string() && b.is_string()) return a.as_string().compare(b.as_string()) < 0 ? -1 : a.as_string() == b.as_string() ? 0 : 1;
    if (a.is_list() && b.is_list()) {
        const List &x = a.as_list(), &y = b.as_list();
        for (size_t i = 0; i < std::min(x.size(), y.size()); ++i)
            if (int c = compare(x[i], y[i], where)) return c;
        return x.size() < y.size() ? -1 : x.size() > y.size() ? 1 : 0;
    }
    where.fail(fmt::format("cannot compare {} with {}", a.type_name(), b.type_name()));
}

size_t length(const Value& value, const Where& where) {
    switch (value.kind()) {
        case Value::Kind::String: return decode_utf8(value.as_string()).size();
        case Value::Kind::List: return value.as_list().size();
        case Value::Kind::Dict: return value.as_dict().items.size();
        case Value::Kind::Undefined: return 0;
        default: where.fail(fmt::format("a {} value has no length", value.type_name()));
    }
}

std::string string_strip(std::string_view text, const Value& chars) { return strip(text, true, true, chars); }

Value call_string_method(const Value& self, const std::string& method, CallArgs& args, const Where& where) {
    if (self.is_undefined()) return string_method("", method, args, where);
    if (!self.is_string()) where.fail(fmt::format("'{}' needs a string, got {}", method, self.type_name()));
    return string_method(self.as_string(), method, args, where);
}

}  // namespace vkllm::chat::jinja
