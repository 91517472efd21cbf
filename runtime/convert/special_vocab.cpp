#include "convert/special_vocab.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "convert/hf_config.h"
#include "core/error.h"
#include "core/file.h"

namespace vkllm::convert {

namespace {

using json = nlohmann::json;

// gguf-py SpecialVocab over the Hugging Face tokenizer files: special ids and add_* flags.
class SpecialVocab {
public:
    SpecialVocab(const std::filesystem::path& dir, size_t n_vocab, const std::optional<json>& tokenizer,
                 std::optional<json> tokenizer_config)
        : dir_(dir), n_vocab_(n_vocab), config_(std::move(tokenizer_config)) {
        load_tokenizer_files(tokenizer);
        load_config_json();
    }

    void write(gguf::Writer& w) const {
        static const std::map<std::string, std::string, std::less<>> id_keys = {
            {"bos", "bos_token_id"},     {"eos", "eos_token_id"},      {"unk", "unknown_token_id"},
            {"sep", "seperator_token_id"}, {"pad", "padding_token_id"}, {"mask", "mask_token_id"},
            {"eot", "eot_token_id"},     {"eom", "eom_token_id"}};
        for (const std::string& kind : kinds_)
            if (auto it = ids_.find(kind); it != ids_.end())
                w.add_u32("tokenizer.ggml." + id_keys.at(kind), it->second);
        for (const char* kind : {"bos", "eos", "sep"})  // the flags gguf-py has a key for
            if (auto it = add_.find(kind); it != add_.end())
                w.add_bool(fmt::format("tokenizer.ggml.add_{}_token", kind), it->second);
        write_chat_template(w);
    }

private:
    void set_id(const std::string& kind, const json& id, const std::string& where) {
        if (!id.is_number_integer()) return;  // lists (several eos ids) and null are ignored
        if (id.get<int64_t>() < 0) fail("{}: the {} token id {} is negative", where, kind, id.get<int64_t>());
        if (id.get<uint64_t>() < n_vocab_) ids_.try_emplace(kind, uint32_t(id.get<uint64_t>()));
    }

    json config_value(const std::string& key) const {
        if (!config_ || !config_->is_object()) return nullptr;
        const auto it = config_->find(key);
        return it == config_->end() ? json() : *it;
    }

    bool has_config() const { return config_ && !config_->empty(); }  // Python's `if tokenizer_config`

    void load_tokenizer_files(const std::optional<json>& tokenizer) {
        const json* added_tokens = nullptr;
        if (tokenizer && tokenizer->is_object()) {
            if (auto it = tokenizer->find("added_tokens"); it != tokenizer->end() && it->is_array()) added_tokens = &*it;
            if (auto it = tokenizer->find("post_processor"); it != tokenizer->end() && it->is_object() && !it->empty())
                read_post_processor(*it);
        }
        if (!has_config()) return;
        for (const std::string& kind : kinds_) {
            if (const json add = config_value("add_" + kind + "_token"); add.is_boolean()) add_[kind] = add.get<bool>();
            json entry = config_value(kind + "_token");
            if (entry.is_object()) entry = entry.contains("content") ? entry["content"] : json();
            if (!entry.is_string() || !added_tokens) continue;
            for (const json& token : *added_tokens)
                if (token.is_object() && token.value("content", json()) == entry) {
                    set_id(kind, token.value("id", json()), (dir_ / "tokenizer.json").string());
                    break;
                }
        }
    }

    // The bos/eos a TemplateProcessing puts around a single sequence (RobertaProcessing: all three).
    void read_post_processor(const json& post_processor) {
        const auto list = post_processor.find("processors");
        const json processors = list != post_processor.end() ? *list : json::array({post_processor});
        if (!processors.is_array()) return;
        json bos = config_value("bos_token"), eos = config_value("eos_token"), cls = config_value("cls_token");
        for (const json& processor : processors) {
            if (!processor.is_object()) continue;
            const json type = processor.value("type", json());
            if (type == "RobertaProcessing") {
                add_["bos"] = add_["eos"] = add_["sep"] = true;
                continue;
            }
            const auto single = processor.find("single");
            if (type != "TemplateProcessing" || single == processor.end() || !single->is_array() || single->size() < 2)
                continue;
            if (const json first = special_token_id(single->front()); first.is_string()) {
                if (!has_config()) bos = first;
                add_["bos"] = first == bos || first == cls;
            }
            if (const json last = special_token_id(single->back()); last.is_string()) {
                if (!has_config()) {
                    eos = last;
                } else if (last != eos) {
                    // the template ends in another token: it becomes eos, the configured one eot (then eom)
                    for (const char* kind : {"eot", "eom"})
                        if (std::find(kinds_.begin(), kinds_.end(), kind) == kinds_.end()) {
                            kinds_.push_back(kind);
                            (*config_)[std::string(kind) + "_token"] = eos;
                            break;
                        }
                    (*config_)["eos_token"] = eos = last;
                }
                add_["eos"] = last == eos;
            }
        }
    }

    static json special_token_id(const json& item) {
        if (!item.is_object() || !item.contains("SpecialToken") || !item["SpecialToken"].is_object()) return nullptr;
        const json id = item["SpecialToken"].value("id", json());
        return id.is_string() && !id.get<std::string>().empty() ? id : json();
    }

    void load_config_json() {
        const std::optional<json> config = optional_json(dir_ / "config.json");
        if (!config || !config->is_object()) return;
        const auto text = config->find("text_config");
        for (const std::string& kind : kinds_) {
            json id = config->value(kind + "_token_id", json());
            if (id.is_null() && text != config->end() && text->is_object()) id = text->value(kind + "_token_id", json());
            set_id(kind, id, (dir_ / "config.json").string());
        }
    }

    // tokenizer_config.json's chat_template (a string, or named templates), else chat_template.jinja
    // or chat_template.json's.
    void write_chat_template(gguf::Writer& w) const {
        if (!has_config()) return;
        json chat_template = config_value("chat_template");
        if (!config_->contains("chat_template")) {
            if (std::filesystem::exists(dir_ / "chat_template.jinja")) {
                chat_template = read_text_file(dir_ / "chat_template.jinja", "chat template");
            } else if (const std::optional<json> file = optional_json(dir_ / "chat_template.json")) {
                if (file->is_object()) chat_template = file->value("chat_template", json());
            }
        }
        if (chat_template.is_string()) {
            w.add_string("tokenizer.chat_template", chat_template.get<std::string>());
            return;
        }
        if (!chat_template.is_array()) return;
        std::vector<std::string> names;
        for (const json& choice : chat_template) {
            if (!choice.is_object() || !choice.value("template", json()).is_string()) continue;
            std::string name = choice.value("name", json()).is_string() ? choice["name"].get<std::string>() : "";
            for (char& c : name)
                if (!std::isalnum(uint8_t(c))) c = '_';
            if (name.empty()) continue;
            const std::string key = name == "default" ? "tokenizer.chat_template" : "tokenizer.chat_template." + name;
            w.add_string(key, choice["template"].get<std::string>());
            if (name != "default") names.push_back(name);
        }
        if (!names.empty()) w.add_string_array("tokenizer.chat_templates", std::span<const std::string>(names));
    }

    std::filesystem::path dir_;
    size_t n_vocab_;
    std::optional<json> config_;
    std::vector<std::string> kinds_ = {"bos", "eos", "unk", "sep", "pad", "mask"};  // cls has no GGUF key
    std::map<std::string, uint32_t, std::less<>> ids_;  // the first source to name a kind wins
    std::map<std::string, bool, std::less<>> add_;
};

}  // namespace

std::optional<json> optional_json(const std::filesystem::path& path) {
    if (!std::filesystem::exists(path)) return std::nullopt;
    return read_json_file(path);
}

void add_special_vocab(gguf::Writer& writer, const std::filesystem::path& dir, size_t n_vocab,
                       const std::optional<nlohmann::json>& tokenizer, std::optional<nlohmann::json> tokenizer_config) {
    SpecialVocab(dir, n_vocab, tokenizer, std::move(tokenizer_config)).write(writer);
}

}  // namespace vkllm::convert
