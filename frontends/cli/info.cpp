// vkllm info MODEL.gguf [--full]: what a GGUF file holds (metadata, tensor table, totals).
#include <cstdio>
#include <limits>
#include <string>

#include "commands.h"
#include "core/error.h"
#include "gguf/dump.h"
#include "gguf/reader.h"
#include "model/model.h"
#include "ops/attention_config.h"

namespace vkllm::cli {

int info(Args args) {
    std::string_view path;
    gguf::DumpOptions options;
    for (std::string_view arg : args) {
        if (arg == "--full") {
            options.array_items = std::numeric_limits<size_t>::max();
            options.string_chars = std::numeric_limits<size_t>::max();
        } else if (path.empty() && !arg.starts_with("-")) {
            path = arg;
        } else {
            fail("unexpected argument '{}'; usage: vkllm info MODEL.gguf [--full]", arg);
        }
    }
    if (path.empty()) fail("usage: vkllm info MODEL.gguf [--full] (a split model: name its first part)");
    const gguf::File file = gguf::File::open(std::string(path));
    const std::string text = gguf::dump(file, options);
    std::fwrite(text.data(), 1, text.size(), stdout);
    if (auto layout = model::kv_layout_from_metadata(file)) {
        uint64_t f16 = 0, q8_0 = 0;
        for (const model::KvLayerLayout& layer : layout->layers)
            for (uint32_t row : {layer.k_row, layer.v_row}) {
                f16 += ops::kv_cache_bytes(ops::KvType::F16, 1, row);
                q8_0 += ops::kv_cache_bytes(ops::KvType::Q8_0, 1, row);
            }
        std::printf("\nKV cache: %llu bytes per token with f16 cells, %llu with q8_0 (%zu layers)\n",
                    (unsigned long long)f16, (unsigned long long)q8_0, layout->layers.size());
    }
    return 0;
}

}  // namespace vkllm::cli
