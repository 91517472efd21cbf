// vkllm info MODEL.gguf [--full] [--json]: what a GGUF file holds (metadata, tensor table, totals).
#include <cstdio>
#include <limits>
#include <string>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "core/error.h"
#include "gguf/dump.h"
#include "gguf/reader.h"
#include "gguf/value.h"
#include "model/model.h"
#include "ops/attention_config.h"
#include "options.h"

namespace vkllm::cli {
namespace {

// A metadata value as JSON; an array longer than `array_items` becomes {"count", "first"}.
nlohmann::ordered_json to_json(const gguf::Value& value, size_t array_items) {
    using gguf::ValueType;
    switch (value.type) {
    case ValueType::String: return std::string(value.string);
    case ValueType::Bool: return value.unsigned_value != 0;
    case ValueType::F32:
    case ValueType::F64: return value.float_value;
    case ValueType::Array: {
        nlohmann::ordered_json items = nlohmann::ordered_json::array();
        for (uint64_t i = 0; i < std::min<uint64_t>(value.count, array_items); ++i)
            items.push_back(to_json(value.item(i), array_items));
        if (items.size() == value.count) return items;
        return {{"count", value.count}, {"first", items}};
    }
    default: return value.is_integer() && gguf::is_signed(value.type) ? nlohmann::ordered_json(value.signed_value)
                                                                     : nlohmann::ordered_json(value.unsigned_value);
    }
}

nlohmann::ordered_json to_json(const gguf::File& file, size_t array_items) {
    nlohmann::ordered_json out = {{"file", file.name()}, {"version", file.version()}, {"alignment", file.alignment()}};
    nlohmann::ordered_json metadata = nlohmann::ordered_json::object();
    for (const gguf::KeyValue& kv : file.metadata()) metadata[std::string(kv.key)] = to_json(kv.value, array_items);
    out["metadata"] = metadata;
    nlohmann::ordered_json tensors = nlohmann::ordered_json::array();
    for (const gguf::Tensor& t : file.tensors())
        tensors.push_back({{"name", t.name},
                           {"type", gguf::type_name(t.type)},
                           {"shape", std::vector<uint64_t>(t.ne.begin(), t.ne.begin() + t.n_dims)},
                           {"bytes", t.nbytes},
                           {"part", t.part},
                           {"offset", t.offset}});
    out["tensors"] = tensors;
    return out;
}

}  // namespace

int info(Args args) {
    std::string path;
    bool full = false, json = false;
    Options parser("info", "MODEL.gguf [--full] [--json]",
                   "What a GGUF file holds: its metadata, tensor table and totals, and the KV cache's bytes per token.");
    parser.positional(path, "MODEL.gguf", "the file (of a split model: its first part)", true)
        .flag("--full", full, "every array item and string character, not the first few")
        .flag("--json", json, "print it as JSON");
    if (!parser.parse(args)) return 0;
    gguf::DumpOptions options;
    if (full) {
        options.array_items = std::numeric_limits<size_t>::max();
        options.string_chars = std::numeric_limits<size_t>::max();
    }
    const gguf::File file = gguf::File::open(path);
    nlohmann::ordered_json out = json ? to_json(file, options.array_items) : nlohmann::ordered_json();
    if (!json) {
        const std::string text = gguf::dump(file, options);
        std::fwrite(text.data(), 1, text.size(), stdout);
    }
    if (auto layout = model::kv_layout_from_metadata(file)) {
        uint64_t f16 = 0, q8_0 = 0;
        for (const model::KvLayerLayout& layer : layout->layers)
            for (uint32_t row : {layer.k_row, layer.v_row}) {
                f16 += ops::kv_cache_bytes(ops::KvType::F16, 1, row);
                q8_0 += ops::kv_cache_bytes(ops::KvType::Q8_0, 1, row);
            }
        if (json)
            out["kv_cache_bytes_per_token"] = {{"f16", f16}, {"q8_0", q8_0}, {"layers", layout->layers.size()}};
        else
            std::printf("\nKV cache: %llu bytes per token with f16 cells, %llu with q8_0 (%zu layers)\n",
                        (unsigned long long)f16, (unsigned long long)q8_0, layout->layers.size());
    }
    // Keys and strings come from the file: bytes that are not UTF-8 are replaced, not refused.
    if (json) std::printf("%s\n", out.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace).c_str());
    return 0;
}

}  // namespace vkllm::cli
