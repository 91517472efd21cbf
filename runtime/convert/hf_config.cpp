#include "convert/hf_config.h"


#include "core/error.h"
#include "core/file.h"

namespace vkllm::convert {

using nlohmann::json;

const json* ConfigSection::get(std::string_view key) const {
    auto it = json_->find(key);
    return it == json_->end() || it->is_null() ? nullptr : &*it;
}

std::string ConfigSection::name(std::string_view key) const {
    return where_.find(": ") == std::string::npos ? fmt::format("{}: {}", where_, key)
                                                 : fmt::format("{}.{}", where_, key);
}

bool ConfigSection::has(std::string_view key) const { return get(key) != nullptr; }

std::optional<uint64_t> ConfigSection::opt_u64(std::string_view key) const {
    const json* value = get(key);
    if (!value) return std::nullopt;
    if (!value->is_number_unsigned()) fail("{} is {}, not a non-negative integer", name(key), value->dump());
    return value->get<uint64_t>();
}

uint64_t ConfigSection::u64(std::string_view key) const {
    auto value = opt_u64(key);
    if (!value) fail("{} is missing", name(key));
    return *value;
}

std::optional<double> ConfigSection::opt_number(std::string_view key) const {
    const json* value = get(key);
    if (!value) return std::nullopt;
    if (!value->is_number()) fail("{} is {}, not a number", name(key), value->dump());
    return value->get<double>();
}

double ConfigSection::number(std::string_view key) const {
    auto value = opt_number(key);
    if (!value) fail("{} is missing", name(key));
    return *value;
}

std::optional<std::string> ConfigSection::opt_string(std::string_view key) const {
    const json* value = get(key);
    if (!value) return std::nullopt;
    if (!value->is_string()) fail("{} is {}, not a string", name(key), value->dump());
    return value->get<std::string>();
}

std::string ConfigSection::string(std::string_view key) const {
    auto value = opt_string(key);
    if (!value) fail("{} is missing", name(key));
    return *value;
}

std::optional<bool> ConfigSection::opt_bool(std::string_view key) const {
    const json* value = get(key);
    if (!value) return std::nullopt;
    if (!value->is_boolean()) fail("{} is {}, not true or false", name(key), value->dump());
    return value->get<bool>();
}

std::optional<ConfigSection> ConfigSection::section(std::string_view key) const {
    const json* value = get(key);
    if (!value) return std::nullopt;
    if (!value->is_object()) fail("{} is not an object", name(key));
    return ConfigSection(*value, name(key));
}

RopeConfig read_rope(const ConfigSection& section) {
    RopeConfig rope;
    // transformers 5 moved rope_theta into rope_parameters; older configs keep it at the top.
    std::optional<ConfigSection> params = section.section("rope_parameters");
    if (!params) params = section.section("rope_scaling");
    rope.theta = section.opt_number("rope_theta").value_or(rope.theta);
    if (!params) return rope;
    rope.theta = params->opt_number("rope_theta").value_or(rope.theta);
    if (auto type = params->opt_string("rope_type")) rope.type = *type;
    else if (auto old_type = params->opt_string("type")) rope.type = *old_type;
    rope.factor = params->opt_number("factor");
    rope.original_context = params->opt_number("original_max_position_embeddings");
    rope.beta_fast = params->opt_number("beta_fast");
    rope.beta_slow = params->opt_number("beta_slow");
    rope.mscale = params->opt_number("mscale");
    rope.mscale_all_dim = params->opt_number("mscale_all_dim");
    rope.llama_4_scaling_beta = params->opt_number("llama_4_scaling_beta");
    return rope;
}

json read_json_file(const std::filesystem::path& path) {
    const std::string text = read_text_file(path, "JSON file");
    try {
        return json::parse(text);
    } catch (const json::exception& error) {
        fail("{}: not valid JSON: {}", path.string(), error.what());
    }
}

HfConfig HfConfig::parse(std::string_view text, std::string name) {
    HfConfig config;
    config.name_ = std::move(name);
    try {
        config.json_ = json::parse(text);
    } catch (const json::exception& error) {
        fail("{}: not valid JSON: {}", config.name_, error.what());
    }
    if (!config.json_.is_object()) fail("{}: the top level is not an object", config.name_);
    return config;
}

HfConfig HfConfig::open(const std::filesystem::path& dir) {
    const std::filesystem::path path = dir / "config.json";
    HfConfig config;
    config.name_ = path.string();
    config.json_ = read_json_file(path);
    if (!config.json_.is_object()) fail("{}: the top level is not an object", config.name_);
    return config;
}

ConfigSection HfConfig::text() const {
    return root().section("text_config").value_or(root());
}

std::optional<ConfigSection> HfConfig::vision() const { return root().section("vision_config"); }

std::string HfConfig::architecture() const {
    auto it = json_.find("architectures");
    if (it == json_.end() || !it->is_array() || it->empty() || !(*it)[0].is_string())
        fail("{}: 'architectures' is not a list naming the model class", name_);
    return (*it)[0].get<std::string>();
}

}  // namespace vkllm::convert
