#include "model/mla.h"

#include <algorithm>

#include <fmt/format.h>

#include "ops/attention.h"
#include "ops/copy.h"
#include "ops/kv_write.h"
#include "ops/matvec_heads.h"
#include "ops/rope.h"

namespace vkllm::model::blocks {
namespace {

constexpr uint64_t f32 = sizeof(float);

std::string layer_name(int layer, std::string_view what) { return fmt::format("blk.{}.{}", layer, what); }

// Q as attention reads it, [n_tokens][n_head][R + rope]: each head's no-RoPE query through its slice of
// attn_k_b (the latent part), then its rotated RoPE query.
graph::Region absorbed_queries(Builder& b, int layer, graph::Region normed, const MlaWeights& w, const MlaSpec& s) {
    const uint32_t n_tokens = b.shape.n_tokens, q_head = s.qk_nope + s.qk_rope, k_row = mla_cache_row(s);
    graph::Region q_in = normed;
    if (w.q_a) {
        q_in = b.graph.transient(layer_name(layer, "q_a"), n_tokens * w.q_a->rows * f32);
        project(b, layer_name(layer, "attn_q_a"), *w.q_a, normed, q_in, false);
        rms_norm(b, layer_name(layer, "attn_q_a_norm"), q_in, *w.q_a_norm, q_in, w.q_a->rows, s.rms_eps);
    }
    // qk_nope floats past the last head let the RoPE view, which starts at the first head's RoPE part,
    // span whole heads.
    auto q = b.graph.transient(layer_name(layer, "q"), (n_tokens * s.n_head * q_head + s.qk_nope) * f32);
    project(b, layer_name(layer, w.q_a ? "attn_q_b" : "attn_q"), w.q, q_in, q, false);
    b.graph.add(layer_name(layer, "rope_q"),
                ops::rope(b.device, s.rope, {n_tokens, s.n_head, q_head, s.n_head * q_head}, s.rope_phases,
                          b.step.positions, q.sub(s.qk_nope * f32, n_tokens * s.n_head * q_head * f32)));

    auto q_abs = b.graph.transient(layer_name(layer, "q_absorbed"), n_tokens * s.n_head * k_row * f32);
    b.graph.add(layer_name(layer, "attn_k_b"),
                ops::matvec_heads(b.device, w.k_b.matrix(b.graph), s.n_head, n_tokens, q,
                                  {s.n_head * q_head, 0, q_head}, q_abs, {s.n_head * k_row, 0, k_row}),
                w.k_b.bytes());
    b.graph.add(layer_name(layer, "q_rope_place"),
                ops::copy_rows(b.device, q, {q_head, s.qk_nope}, q_abs, {k_row, s.kv_lora_rank}, n_tokens * s.n_head,
                               s.qk_rope));
    if (s.temperature_beta != 0)
        b.graph.add(layer_name(layer, "attn_temp"),
                    ops::attn_temp(b.device, b.step.positions, q_abs, n_tokens, s.n_head * k_row, s.temperature_beta,
                                   s.temperature_length));
    return q_abs;
}

// This step's cache rows [normalised latent | rotated RoPE key], written into the cache.
void write_cache_rows(Builder& b, int layer, graph::Region normed, const MlaWeights& w, const MlaSpec& s,
                      const KvLayerRegions& cache, ops::KvType kv_type) {
    const uint32_t n_tokens = b.shape.n_tokens, k_row = mla_cache_row(s), R = s.kv_lora_rank;
    auto rows = b.graph.transient(layer_name(layer, "kv_a"), n_tokens * k_row * f32);
    project(b, layer_name(layer, "attn_kv_a_mqa"), w.kv_a, normed, rows, false);
    b.graph.add(layer_name(layer, "rope_k"),
                ops::rope(b.device, s.rope, {n_tokens, 1, s.qk_rope, k_row}, s.rope_phases, b.step.positions,
                          rows.sub(R * f32, ((n_tokens - 1) * k_row + s.qk_rope) * f32)));
    // The norm takes contiguous rows: one token's latent is; many tokens' are gathered and put back.
    if (n_tokens == 1) {
        rms_norm(b, layer_name(layer, "attn_kv_a_norm"), rows.sub(0, R * f32), w.kv_a_norm, rows.sub(0, R * f32), R,
                 s.rms_eps);
    } else {
        auto latent = b.graph.transient(layer_name(layer, "latent"), n_tokens * R * f32);
        b.graph.add(layer_name(layer, "latent_gather"),
                    ops::copy_rows(b.device, rows, {k_row, 0}, latent, {R, 0}, n_tokens, R));
        rms_norm(b, layer_name(layer, "attn_kv_a_norm"), latent, w.kv_a_norm, latent, R, s.rms_eps);
        b.graph.add(layer_name(layer, "latent_place"),
                    ops::copy_rows(b.device, latent, {R, 0}, rows, {k_row, 0}, n_tokens, R));
    }
    b.graph.add(
        layer_name(layer, "cache_k"),
        ops::kv_write(b.device, kv_type, {n_tokens, k_row, k_row, cache.n_cells_all}, rows, cache.slots, cache.k));
}

}  // namespace

void attention_mla(Builder& b, int layer, graph::Region x, const MlaWeights& weights, const MlaSpec& spec,
                   const KvLayerRegions& cache, ops::KvType kv_type) {
    const uint32_t n_tokens = b.shape.n_tokens, n_embd = weights.norm.cols, k_row = mla_cache_row(spec);
    auto normed = b.graph.transient(layer_name(layer, "attn_norm_out"), n_tokens * n_embd * f32);
    rms_norm(b, layer_name(layer, "attn_norm"), x, weights.norm, normed, n_embd, spec.rms_eps);
    graph::Region q = absorbed_queries(b, layer, normed, weights, spec);
    write_cache_rows(b, layer, normed, weights, spec, cache, kv_type);

    // One KV head (MQA over the latent) whose V is each cached row's latent prefix. The absorbed
    // queries are large and q.k sums R + rope products, so it is formed in fp32 (fp16 tiles double
    // the error against llama.cpp, to ~1e-3 relative RMS on the fixtures).
    const ops::AttentionConfig config{.n_head = spec.n_head, .n_head_kv = 1, .head_dim_k = k_row,
                                      .head_dim_v = spec.kv_lora_rank, .scale = spec.kq_scale, .float16 = false};
    const ops::AttentionShape shape{.n_tokens = n_tokens, .n_cells = cache.n_cells, .kv_type = kv_type, .v_stride = k_row};
    auto latent_out = b.graph.transient(layer_name(layer, "attn_latent_out"), n_tokens * spec.n_head * spec.kv_lora_rank * f32);
    sequence_attention(b, layer_name(layer, "attn"), config, shape, q, spec.n_head * k_row, cache, /*v_from_k=*/true,
                       latent_out);

    // Each head's latent output back to v_head_dim values through its slice of attn_v_b.
    const uint32_t out_row = spec.n_head * spec.v_head_dim, latent_row = spec.n_head * spec.kv_lora_rank;
    auto out = b.graph.transient(layer_name(layer, "attn_out"), n_tokens * out_row * f32);
    b.graph.add(layer_name(layer, "attn_v_b"),
                ops::matvec_heads(b.device, weights.v_b.matrix(b.graph), spec.n_head, n_tokens, latent_out,
                                  {latent_row, 0, spec.kv_lora_rank}, out, {out_row, 0, spec.v_head_dim}),
                weights.v_b.bytes());
    project(b, layer_name(layer, "attn_output"), weights.output, out, x, true);
}

}  // namespace vkllm::model::blocks
