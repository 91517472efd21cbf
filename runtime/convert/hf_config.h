#pragma once
// A Hugging Face config.json: typed access to the top level and its nested sections
// (text_config, vision_config), each error naming the file and the dotted key.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace vkllm::convert {

class ConfigSection {
public:
    ConfigSection(const nlohmann::json& json, std::string where) : json_(&json), where_(std::move(where)) {}

    bool has(std::string_view key) const;  // present and not null
    uint64_t u64(std::string_view key) const;
    std::optional<uint64_t> opt_u64(std::string_view key) const;
    double number(std::string_view key) const;
    std::optional<double> opt_number(std::string_view key) const;
    std::string string(std::string_view key) const;
    std::optional<std::string> opt_string(std::string_view key) const;
    std::optional<bool> opt_bool(std::string_view key) const;
    std::optional<ConfigSection> section(std::string_view key) const;  // a nested object

    const std::string& where() const { return where_; }  // "config.json: text_config"

private:
    const nlohmann::json* get(std::string_view key) const;  // nullptr when absent or null
    std::string name(std::string_view key) const;

    const nlohmann::json* json_;
    std::string where_;
};

// RoPE settings from `rope_parameters` (transformers 5) or `rope_scaling` plus `rope_theta`.
struct RopeConfig {
    double theta = 10000;
    std::string type = "default";  // default, linear, yarn, ...
    std::optional<double> factor, original_context, beta_fast, beta_slow, mscale, mscale_all_dim,
        llama_4_scaling_beta;
};
RopeConfig read_rope(const ConfigSection& section);

class HfConfig {
public:
    static HfConfig open(const std::filesystem::path& dir);  // dir/config.json
    static HfConfig parse(std::string_view text, std::string name);

    ConfigSection root() const { return {json_, name_}; }
    ConfigSection text() const;                   // text_config, or the top level when absent
    std::optional<ConfigSection> vision() const;  // vision_config
    std::string architecture() const;             // architectures[0]

private:
    nlohmann::json json_;
    std::string name_;
};

// A JSON file of the checkpoint folder (preprocessor_config.json, tekken.json...), parsed;
// throws naming the file when it is missing or malformed.
nlohmann::json read_json_file(const std::filesystem::path& path);

}  // namespace vkllm::convert
