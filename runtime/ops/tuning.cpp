#include "ops/tuning.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include <fmt/format.h>

#include "core/env.h"
#include "core/error.h"
#include "core/json.h"
#include "gpu/capabilities.h"
#include "gpu/pipeline.h"

namespace vkllm::ops {

namespace {

constexpr int tuning_format = 1;

std::string lower(std::string_view text) {
    std::string out(text);
    std::ranges::transform(out, out.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    return out;
}

std::optional<gguf::GgmlType> weight_type_named(std::string_view name) {
    for (const gguf::TypeTraits& traits : gguf::type_table)
        if (lower(traits.name) == lower(name) && gguf::runs_on_vkllm(traits.type)) return traits.type;
    return std::nullopt;
}

std::string hex(std::span<const uint8_t> bytes) {
    std::string out;
    for (uint8_t byte : bytes) out += fmt::format("{:02x}", byte);
    return out;
}

uint32_t positive(const nlohmann::ordered_json& entry, const char* field) {
    const nlohmann::ordered_json& value = entry.at(field);
    if (!value.is_number_unsigned() || value.get<uint64_t>() == 0 || value.get<uint64_t>() > UINT32_MAX)
        fail("'{}' is {}, not a positive whole number", field, value.dump());
    return value.get<uint32_t>();
}

gguf::GgmlType entry_type(const nlohmann::ordered_json& entry) {
    const std::string name = entry.at("type").get<std::string>();
    std::optional<gguf::GgmlType> type = weight_type_named(name);
    if (!type) fail("'{}' is no weight type vkllm runs", name);
    return *type;
}

// Checks an entry against the kernel and the device; throws vkllm::Error saying why it cannot run.
TunedMatvec matvec_entry(const nlohmann::ordered_json& entry, const gpu::Capabilities& caps) {
    TunedMatvec tuned{.type = entry_type(entry), .cols = positive(entry, "cols"), .batch = entry.at("batch").get<bool>(),
                      .workgroup_size = positive(entry, "workgroup_size"),
                      .threads_per_row = positive(entry, "threads_per_row"),
                      .rows_per_team = positive(entry, "rows_per_team")};
    check_weight_shape(tuned.type, 1, tuned.cols, "matvec");
    check_matvec_config({.workgroup_size = tuned.workgroup_size, .threads_per_row = tuned.threads_per_row,
                         .rows_per_team = tuned.rows_per_team},
                        caps, tuned.type);
    return tuned;
}

TunedMatmul matmul_entry(const nlohmann::ordered_json& entry, const gpu::Capabilities& caps) {
    const std::string kernel = entry.at("kernel").get<std::string>();
    if (kernel != "texel" && kernel != "shared") fail("kernel '{}' is neither texel nor shared", kernel);
    TunedMatmul tuned{.type = entry_type(entry), .texel_reads = kernel == "texel",
                      .tile_rows = positive(entry, "tile_rows"), .tile_tokens = positive(entry, "tile_tokens")};
    check_matmul_config({.tile_rows = tuned.tile_rows, .tile_tokens = tuned.tile_tokens, .texel_reads = tuned.texel_reads},
                        caps, tuned.type, "matmul");
    return tuned;
}

// The message of an error without a trailing period, to end a sentence of ours.
std::string reason(const std::exception& error) {
    std::string text = error.what();
    while (!text.empty() && (text.back() == '.' || text.back() == '\n')) text.pop_back();
    return text;
}

struct Store {
    std::mutex mutex;
    std::map<std::string, Tuning> by_key;
    std::vector<std::string> used;
};

Store& store() {
    static Store instance;
    return instance;
}

bool applies(const gpu::Capabilities& caps) { return caps.profile.empty() && env::get("VKLLM_TUNING") != "0"; }

void note_used(std::string text) {
    Store& s = store();
    std::lock_guard lock(s.mutex);
    if (std::ranges::find(s.used, text) == s.used.end()) s.used.push_back(std::move(text));
}

}  // namespace

std::string tuning_key(const gpu::Capabilities& caps) {
    return fmt::format("{:04x}-{:04x}-{}-{}", caps.vendor_id, caps.device_id, caps.driver_version,
                       hex(caps.pipeline_cache_uuid));
}

std::filesystem::path tuning_path(const gpu::Capabilities& caps) {
    const std::filesystem::path dir = gpu::cache_directory();
    return dir.empty() ? dir : dir / ("tuning-" + tuning_key(caps) + ".json");
}

Tuning parse_tuning(std::string_view text, const gpu::Capabilities& caps, std::string_view source,
                    std::vector<std::string>& refused) {
    Tuning tuning;
    nlohmann::ordered_json root;
    try {
        root = parse_json(text, "its text");  // a file anyone may have written: depth-bounded, as every outside JSON
        if (!root.is_object() || root.value("format", 0) != tuning_format || root.value("key", "") != tuning_key(caps))
            fail("no tuning file of format {} for this device and driver", tuning_format);
        if (!root.at("matvec").is_array() || !root.at("matmul").is_array())
            fail("'matvec' and 'matmul' are not lists");
    } catch (const std::exception& error) {
        refused.push_back(fmt::format("{} is refused: {}; the default launches are used", source, reason(error)));
        return tuning;
    }
    for (const nlohmann::ordered_json& entry : root["matvec"]) {
        try {
            tuning.matvec.push_back(matvec_entry(entry, caps));
        } catch (const std::exception& error) {
            refused.push_back(fmt::format("{}: the matvec entry {} is refused: {}", source, entry.dump(), reason(error)));
        }
    }
    for (const nlohmann::ordered_json& entry : root["matmul"]) {
        try {
            tuning.matmul.push_back(matmul_entry(entry, caps));
        } catch (const std::exception& error) {
            refused.push_back(fmt::format("{}: the matmul entry {} is refused: {}", source, entry.dump(), reason(error)));
        }
    }
    return tuning;
}

std::string tuning_json(const Tuning& tuning, const gpu::Capabilities& caps) {
    nlohmann::json root = {{"format", tuning_format}, {"key", tuning_key(caps)}, {"device", caps.name},
                           {"driver", fmt::format("{} {}", caps.driver_name, caps.driver_version_string())},
                           {"matvec", nlohmann::json::array()}, {"matmul", nlohmann::json::array()}};
    for (const TunedMatvec& entry : tuning.matvec)
        root["matvec"].push_back({{"type", lower(gguf::type_name(entry.type))}, {"cols", entry.cols},
                                  {"batch", entry.batch}, {"workgroup_size", entry.workgroup_size},
                                  {"threads_per_row", entry.threads_per_row}, {"rows_per_team", entry.rows_per_team}});
    for (const TunedMatmul& entry : tuning.matmul)
        root["matmul"].push_back({{"type", lower(gguf::type_name(entry.type))},
                                  {"kernel", entry.texel_reads ? "texel" : "shared"}, {"tile_rows", entry.tile_rows},
                                  {"tile_tokens", entry.tile_tokens}});
    return root.dump(2) + "\n";
}

void save_tuning(const Tuning& tuning, const gpu::Capabilities& caps) {
    const std::filesystem::path path = tuning_path(caps);
    if (path.empty()) fail("no cache directory to keep the tuning in (set VKLLM_CACHE_DIR, XDG_CACHE_HOME or HOME)");
    std::error_code error;
    std::filesystem::create_directories(path.parent_path(), error);
    const std::filesystem::path temporary = path.string() + ".tmp";
    {
        std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
        out << tuning_json(tuning, caps);
        if (!out.flush()) fail("cannot write the tuning file {}", temporary.string());
    }
    std::filesystem::rename(temporary, path, error);
    if (error) fail("cannot write the tuning file {}: {}", path.string(), error.message());
    // The next lookup reads the new file.
    std::lock_guard lock(store().mutex);
    store().by_key.erase(tuning_key(caps));
}

const Tuning& device_tuning(const gpu::Capabilities& caps) {
    static const Tuning none;
    if (!applies(caps)) return none;
    Store& s = store();
    std::lock_guard lock(s.mutex);
    const std::string key = tuning_key(caps);
    if (auto found = s.by_key.find(key); found != s.by_key.end()) return found->second;
    Tuning& tuning = s.by_key[key];
    const std::filesystem::path path = tuning_path(caps);
    std::ifstream in(path, std::ios::binary);
    if (path.empty() || !in) return tuning;
    std::stringstream text;
    text << in.rdbuf();
    std::vector<std::string> refused;
    tuning = parse_tuning(text.str(), caps, fmt::format("the tuning file {}", path.string()), refused);
    for (const std::string& message : refused) std::fprintf(stderr, "vkllm: %s.\n", message.c_str());
    return tuning;
}

std::optional<TunedMatvec> tuned_matvec(const gpu::Capabilities& caps, gguf::GgmlType type, uint32_t cols,
                                        uint32_t n_tokens) {
    for (const TunedMatvec& entry : device_tuning(caps).matvec)
        if (entry.type == type && entry.cols == cols && entry.batch == (n_tokens > 1)) {
            note_used(describe(entry));
            return entry;
        }
    return std::nullopt;
}

std::optional<TunedMatmul> tuned_matmul(const gpu::Capabilities& caps, gguf::GgmlType type, bool texel_reads) {
    for (const TunedMatmul& entry : device_tuning(caps).matmul)
        if (entry.type == type && entry.texel_reads == texel_reads) {
            note_used(describe(entry));
            return entry;
        }
    return std::nullopt;
}

std::string describe(const TunedMatvec& entry) {
    return fmt::format("matvec {} {} cols, {}: wg {} team {} rows {}", lower(gguf::type_name(entry.type)), entry.cols,
                       entry.batch ? "2-8 vectors" : "1 vector", entry.workgroup_size, entry.threads_per_row,
                       entry.rows_per_team);
}

std::string describe(const TunedMatmul& entry) {
    return fmt::format("matmul {} {}: {} x {}", lower(gguf::type_name(entry.type)),
                       entry.texel_reads ? "texel" : "shared", entry.tile_rows, entry.tile_tokens);
}

std::vector<std::string> tuned_shapes_used() {
    std::lock_guard lock(store().mutex);
    return store().used;
}

}  // namespace vkllm::ops
