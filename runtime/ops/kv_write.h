#pragma once
// KV-cache writes: rows of K or V projections into the cache cells named by an int32 slot buffer,
// rounded to f16 or quantized to q8_0 (layout: ops/attention_config.h). kv_write stores rows as they
// are (shaders/kv_write.comp); rope_kv_write also applies RoPE to q and k of fused qkv rows, so one
// pass replaces RoPE and both cache writes (shaders/rope_kv_write.comp).
#include <cstdint>

#include "graph/graph.h"
#include "ops/attention_config.h"
#include "ops/rope_config.h"

namespace vkllm::ops {

struct KvWriteShape {
    uint32_t n_tokens = 0;
    uint32_t row_size = 0;    // n_head_kv * head_dim; a multiple of 32 for Q8_0
    uint32_t src_stride = 0;  // floats between source rows (0: row_size)
    uint32_t n_cells = 0;     // cells of the cache; slots outside it are skipped
};

// rows: f32; slots: int32 [n_tokens]; cache: kv_cache_bytes(type, n_cells, row_size).
graph::Dispatch kv_write(gpu::Device& device, KvType type, const KvWriteShape& shape, const graph::Region& rows,
                         const graph::Region& slots, const graph::Region& cache);

// qkv rows [n_tokens] of token_stride floats, each q [n_head][head_dim], k [n_head_kv][head_dim],
// v [n_head_kv][head_dim_v] (then anything up to the stride).
struct RopeKvShape {
    uint32_t n_tokens = 0, n_head = 0, n_head_kv = 0, head_dim = 0, head_dim_v = 0;
    uint32_t token_stride = 0;  // 0: the three parts packed
    uint32_t n_cells = 0;       // cells of each cache; slots outside it are skipped
    // The Llama-4 attention temperature (model-notes.md B.5): q *= 1 + beta * ln(1 + floor(pos /
    // length)) after RoPE, as ops::attn_temp does; beta 0: none.
    float temperature_beta = 0;
    uint32_t temperature_length = 0;
};

// Rotates q in place (and scales it by the attention temperature), and writes rope(k) and v into
// cells slots[t] of k_cache and v_cache; phases and positions as ops::rope takes them.
graph::Dispatch rope_kv_write(gpu::Device& device, const RopeConfig& rope, KvType type, const RopeKvShape& shape,
                              const graph::Region& phases, const graph::Region& positions, const graph::Region& slots,
                              const graph::Region& qkv, const graph::Region& k_cache, const graph::Region& v_cache);

}  // namespace vkllm::ops
