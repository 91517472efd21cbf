// vkllm info MODEL.gguf [--full] [--json]: what a GGUF file holds (metadata, tensor table, totals).
// With --memory [-c N]: the memory the model would take on the device, planned without loading it.
#include <cstdio>
#include <limits>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "core/error.h"
#include "gguf/dump.h"
#include "gguf/reader.h"
#include "gguf/value.h"
#include "gpu/device.h"
#include "gpu/instance.h"
#include "model/memory_plan.h"
#include "model/model.h"
#include "model_options.h"
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

struct MemoryOptions {
    uint32_t n_ctx = 0;
    ops::KvType kv_type = ops::KvType::F16;
    std::optional<std::string> device;
};

// The plan as `vkllm run` would make it on the device, which is opened but given no model.
int print_memory_plan(const gguf::File& file, const MemoryOptions& options, bool json) {
    const std::optional<model::KvLayout> layout = model::kv_layout_from_metadata(file);
    if (!layout)
        fail("{}: its architecture does not say its KV cache without loading, so it has no memory plan here",
             file.name());
    gpu::Instance instance;
    gpu::Device device(instance, options.device);
    const model::MemoryPlan plan =
        model::plan_memory(file, *layout, {.n_ctx = options.n_ctx, .kv_type = options.kv_type},
                           model::MemoryBudget::of(device.caps(), device.allocator().max_binding_range()));
    if (!json) {
        const std::string text = plan.describe();
        std::fwrite(text.data(), 1, text.size(), stdout);
        return 0;
    }
    const nlohmann::ordered_json out = {
        {"file", file.name()}, {"device", device.caps().name}, {"n_ctx", plan.n_ctx},
        {"weight_bytes", plan.weights}, {"weight_bytes_host", plan.weights_host}, {"host_weights", plan.host_units},
        {"kv_cache_bytes", plan.kv}, {"compute_bytes", plan.compute}, {"total_bytes", plan.total()},
        {"device_local_bytes", plan.device_local()}, {"device_local_budget_bytes", plan.budget.device_local},
        {"unified_memory", plan.budget.unified}};
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
}

}  // namespace

int info(Args args) {
    std::string path;
    bool full = false, json = false, memory = false;
    MemoryOptions memory_options;
    Options parser("info", "MODEL.gguf [--full] [--json] [--memory [-c N]]",
                   "What a GGUF file holds: its metadata, tensor table and totals, and the KV cache's bytes per token; "
                   "with --memory, the memory it takes on the device, without loading it.");
    parser.positional(path, "MODEL.gguf", "the file (of a split model: its first part)", true)
        .flag("--full", full, "every array item and string character, not the first few")
        .flag("--json", json, "print it as JSON")
        .flag("--memory", memory, "the memory plan: weights per heap, KV cache, compute buffers, what the device has")
        .add("-c,--ctx-size", memory_options.n_ctx, "N", "the plan's context; 0: the largest that fits, up to the model's own or 4096")
        .add("--kv-type", [&](std::string_view value) { memory_options.kv_type = parse_kv_type(value); }, "f16|q8_0",
             "the plan's KV cache cell type", "f16")
        .add("--device", memory_options.device, "I|NAME", "the plan's Vulkan device (vkllm devices lists them)");
    if (!parser.parse(args)) return 0;
    if (!memory && (memory_options.n_ctx || memory_options.device))
        fail("-c and --device plan memory: give them with --memory");
    if (memory) return print_memory_plan(gguf::File::open(path), memory_options, json);
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
