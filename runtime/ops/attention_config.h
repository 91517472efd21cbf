#pragma once
// Attention and KV-cache parameters (model-notes.md C.0 "Attention"). GPU-free, so the reference and
// the host ops share one definition.
#include <cstdint>

namespace vkllm::ops {

// Element type of a KV cache. The cache of one layer holds n_cells rows (one per token slot) of
// row_size = n_head_kv * head_dim values:
//   F16:  [n_cells][row_size] f16.
//   Q8_0: ggml q8_0 numerics (blocks of 32 along the row: d = amax/127 as f16, q = round(x/d)), laid
//         out as [n_cells][row_size] int8 quants followed by [n_cells][row_size/32] f16 scales, so
//         that quants are read with aligned wide loads.
enum class KvType : uint32_t { F16, Q8_0 };

constexpr uint32_t kv_q8_block = 32;

// Bytes of one layer's K or V cache.
constexpr uint64_t kv_cache_bytes(KvType type, uint32_t n_cells, uint32_t row_size) {
    uint64_t values = uint64_t(n_cells) * row_size;
    return type == KvType::F16 ? values * 2 : values + values / kv_q8_block * 2;
}

struct AttentionConfig {
    uint32_t n_head = 0;
    uint32_t n_head_kv = 0;   // query head h reads KV head h / (n_head / n_head_kv)
    uint32_t head_dim_k = 0;  // q and k
    uint32_t head_dim_v = 0;
    float scale = 1.0f;       // kq_scale
    float softcap = 0.0f;     // logits become softcap * tanh(logit / softcap); 0 = off
    uint32_t n_swa = 0;       // sliding window: a query at p sees keys p - n_swa + 1 .. p; 0 = all
    bool float16 = true;      // prefill may hold its tiles in f16 where the device has fp16 arithmetic
    bool causal = true;       // false: every query sees the keys up to the batch's last position (as
                              // llama.cpp decodes Gemma 3's image tokens)
};

}  // namespace vkllm::ops
