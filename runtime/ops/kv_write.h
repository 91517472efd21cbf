#pragma once
// KV-cache write (shaders/kv_write.comp): rows of K or V projections into the cache cells named by
// an int32 slot buffer, rounded to f16 or quantized to q8_0 (layout: ops/attention_config.h).
#include <cstdint>

#include "gpu/dispatch.h"
#include "ops/attention_config.h"

namespace vkllm::ops {

struct KvWriteShape {
    uint32_t n_tokens = 0;
    uint32_t row_size = 0;    // n_head_kv * head_dim; a multiple of 32 for Q8_0
    uint32_t src_stride = 0;  // floats between source rows (0: row_size)
    uint32_t n_cells = 0;     // cells of the cache; slots outside it are skipped
};

// rows: f32; slots: int32 [n_tokens]; cache: kv_cache_bytes(type, n_cells, row_size).
gpu::Dispatch kv_write(gpu::Device& device, KvType type, const KvWriteShape& shape, const gpu::BufferRange& rows,
                       const gpu::BufferRange& slots, const gpu::BufferRange& cache);

}  // namespace vkllm::ops
