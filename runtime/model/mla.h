#pragma once
// Multi-head latent attention with the KV up-projection absorbed (model-notes.md C.4), shared by
// `deepseek2` and `mistral4`. The cache keeps one row per token: the normalised latent (kv_lora_rank
// values) and the rotated RoPE key (qk_rope), which every query head shares. Each head's no-RoPE query
// is taken into latent space through its slice of attn_k_b, scores are dot products with the cached
// rows, the weighted sum of latents stays in latent space, and attn_v_b brings each head back.
#include <cstdint>

#include "model/blocks.h"

namespace vkllm::model::blocks {

struct MlaWeights {
    const Weight& norm;                 // attn_norm {n_embd}
    const Weight* q_a = nullptr;        // attn_q_a {n_embd, q_lora_rank}; null: q is a plain projection
    const Weight* q_a_norm = nullptr;   // attn_q_a_norm {q_lora_rank}
    const Weight& q;                    // attn_q_b {q_lora_rank, n_head * (nope + rope)}, or attn_q {n_embd, ...}
    const Weight& kv_a;                 // attn_kv_a_mqa {n_embd, kv_lora_rank + rope}: latent, then RoPE key
    const Weight& kv_a_norm;            // attn_kv_a_norm {kv_lora_rank}
    const Weight& k_b;                  // attn_k_b {nope, kv_lora_rank, n_head}
    const Weight& v_b;                  // attn_v_b {kv_lora_rank, v_head_dim, n_head}
    const Weight& output;               // attn_output {n_head * v_head_dim, n_embd}
};

struct MlaSpec {
    uint32_t n_head = 0;
    uint32_t kv_lora_rank = 0;  // R: the latent
    uint32_t qk_nope = 0;       // per-head query dims without RoPE
    uint32_t qk_rope = 0;       // per-head query dims with RoPE, and the shared RoPE key's
    uint32_t v_head_dim = 0;
    float kq_scale = 0;
    ops::RopeConfig rope;       // NORMAL pairs over qk_rope dims
    graph::Region rope_phases;  // ops::rope_phase_table(rope), uploaded
    float rms_eps = 0;
    float temperature_beta = 0;  // Llama-4 attention temperature (B.5); 0: off
    uint32_t temperature_length = 0;
};

// Values per token of an MLA layer's cache row: the latent and the RoPE key.
inline uint32_t mla_cache_row(const MlaSpec& spec) { return spec.kv_lora_rank + spec.qk_rope; }

// x += output · v_b · attention(q, cache) over norm(x), writing this step's rows into cache.k
// (cache.v is unused: V is the latent prefix of each K row).
void attention_mla(Builder& b, int layer, graph::Region x, const MlaWeights& weights, const MlaSpec& spec,
                   const KvLayerRegions& cache, ops::KvType kv_type);

}  // namespace vkllm::model::blocks
