// The ViT blocks of SigLIP (LayerNorm with biases, GELU MLP) and Pixtral (RMSNorm, 2-D RoPE, gated
// SiLU MLP), as llama.cpp's clip_graph::build_vit; model-notes.md D.2, D.3.
#include "vision/vit.h"

#include <cmath>

#include <fmt/format.h>

#include "core/error.h"
#include "ops/attention.h"
#include "ops/elementwise.h"
#include "ops/gelu.h"
#include "ops/kv_write.h"
#include "ops/layernorm.h"
#include "ops/rmsnorm.h"
#include "ops/rope.h"

namespace vkllm::vision {
namespace {

using model::blocks::Builder;
using model::blocks::linear;
constexpr uint64_t f32 = sizeof(float);

std::string layer_name(int layer, std::string_view what) { return fmt::format("v.blk.{}.{}", layer, what); }


// LayerNorm where the norm has a bias (SigLIP), RMSNorm otherwise (Pixtral).
void norm(Builder& b, const std::string& name, const Weight& weight, const std::optional<Weight>& bias,
          graph::Region x, graph::Region y, float eps) {
    const uint32_t n = weight.cols, rows = b.shape.n_tokens;
    b.graph.add(name, bias ? ops::layernorm(b.device, x, weight.region(b.graph), bias->region(b.graph), y, n, rows, eps)
                           : ops::rmsnorm(b.device, x, weight.region(b.graph), y, n, rows, eps));
}

void rope_2d(Builder& b, const ClipHparams& hp, const VitInputs& in, int layer, const char* what, graph::Region x) {
    const std::array<ops::RopeConfig, 2> configs = pixtral_rope_configs(hp);
    const uint32_t n = b.shape.n_tokens, d = hp.head_dim;
    const ops::RopeShape shape{n, hp.n_head, d, hp.n_embd};
    // The second half's heads start d/2 floats in; x carries d/2 floats of tail room for the last.
    b.graph.add(layer_name(layer, fmt::format("{}_rope_h", what)),
                ops::rope(b.device, configs[0], shape, in.phases_h, in.pos_h, x));
    b.graph.add(layer_name(layer, fmt::format("{}_rope_w", what)),
                ops::rope(b.device, configs[1], shape, in.phases_w, in.pos_w,
                          x.sub(d / 2 * f32, uint64_t(n) * hp.n_embd * f32)));
}

// x += out · softmax(q kᵀ / sqrt(d)) v over norm(x), every patch seeing every patch.
void attention(Builder& b, const ClipHparams& hp, const VitLayerWeights& l, const VitInputs& in, int il,
               graph::Region x) {
    const uint32_t n = b.shape.n_tokens, n_embd = hp.n_embd;
    const bool rope = hp.projector == ProjectorType::Pixtral;
    const uint64_t row_bytes = uint64_t(n) * n_embd * f32, tail = rope ? hp.head_dim / 2 * f32 : 0;
    auto h = b.graph.transient(layer_name(il, "ln1_out"), row_bytes);
    norm(b, layer_name(il, "ln1"), l.ln1, l.ln1_b, x, h, hp.eps);
    auto q = b.graph.transient(layer_name(il, "q"), row_bytes + tail);
    auto k = b.graph.transient(layer_name(il, "k"), row_bytes + tail);
    auto v = b.graph.transient(layer_name(il, "v"), row_bytes);
    linear(b, layer_name(il, "attn_q"), l.attn_q, l.attn_q_b, h, q);
    linear(b, layer_name(il, "attn_k"), l.attn_k, l.attn_k_b, h, k);
    linear(b, layer_name(il, "attn_v"), l.attn_v, l.attn_v_b, h, v);
    if (rope) {
        rope_2d(b, hp, in, il, "q", q);
        rope_2d(b, hp, in, il, "k", k);
    }
    // K and V go through an f16 cache of n cells, as llama.cpp's flash attention casts them.
    const ops::AttentionConfig config{hp.n_head, hp.n_head, hp.head_dim, hp.head_dim, 1.0f / std::sqrt(float(hp.head_dim))};
    const uint64_t cache_bytes = ops::kv_cache_bytes(ops::KvType::F16, n, n_embd);
    auto k_cache = b.graph.transient(layer_name(il, "k_cache"), cache_bytes);
    auto v_cache = b.graph.transient(layer_name(il, "v_cache"), cache_bytes);
    const ops::KvWriteShape write{n, n_embd, n_embd, n};
    b.graph.add(layer_name(il, "cache_k"), ops::kv_write(b.device, ops::KvType::F16, write, k, in.slots, k_cache));
    b.graph.add(layer_name(il, "cache_v"), ops::kv_write(b.device, ops::KvType::F16, write, v, in.slots, v_cache));
    auto out = b.graph.transient(layer_name(il, "attn_out"), row_bytes);
    model::blocks::attention(b, layer_name(il, "attn"), config, {n, n, ops::KvType::F16},
                             {q, k_cache, v_cache, in.mask_positions, out});
    linear(b, layer_name(il, "attn_out"), l.attn_out, l.attn_out_b, out, x, /*accumulate=*/true);
}

// x += down · act(up · norm(x)): GELU (SigLIP) or SiLU(gate) * up (Pixtral).
void feed_forward(Builder& b, const ClipHparams& hp, const VitLayerWeights& l, int il, graph::Region x) {
    const uint32_t n = b.shape.n_tokens;
    const uint64_t ff_bytes = uint64_t(n) * hp.n_ff * f32;
    auto h = b.graph.transient(layer_name(il, "ln2_out"), uint64_t(n) * hp.n_embd * f32);
    norm(b, layer_name(il, "ln2"), l.ln2, l.ln2_b, x, h, hp.eps);
    auto up = b.graph.transient(layer_name(il, "ffn_up_out"), ff_bytes);
    linear(b, layer_name(il, "ffn_up"), l.ffn_up, l.ffn_up_b, h, up);
    if (l.ffn_gate) {
        auto gate = b.graph.transient(layer_name(il, "ffn_gate_out"), ff_bytes);
        linear(b, layer_name(il, "ffn_gate"), *l.ffn_gate, std::nullopt, h, gate);
        b.graph.add(layer_name(il, "ffn_act"), ops::glu(b.device, ops::Glu::SwiGlu, gate, up, up, n * hp.n_ff));
    } else {
        b.graph.add(layer_name(il, "ffn_act"), ops::gelu(b.device, up, up, n * hp.n_ff));
    }
    linear(b, layer_name(il, "ffn_down"), l.ffn_down, l.ffn_down_b, up, x, /*accumulate=*/true);
}

}  // namespace

graph::Region build_vit(Builder& b, const ClipHparams& hp, const ClipWeights& w, const VitInputs& in) {
    const uint32_t n = in.nx * in.ny;
    const uint64_t bytes = uint64_t(n) * hp.n_embd * f32;
    // The patch convolution as a matmul over the unfolded patches.
    auto x = b.graph.transient("v.inp_embd", bytes);
    linear(b, "v.patch_embd", w.patch_embd, w.patch_bias, in.patches, x);
    if (w.position_embd)
        b.graph.add("v.position_embd",
                    ops::add(b.device, x, w.position_embd->region(b.graph), x, n * hp.n_embd, n * hp.n_embd));
    if (w.pre_ln) norm(b, "v.pre_ln", *w.pre_ln, std::nullopt, x, x, hp.eps);
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        attention(b, hp, w.layers[il], in, int(il), x);
        feed_forward(b, hp, w.layers[il], int(il), x);
    }
    if (w.post_ln) norm(b, "v.post_ln", *w.post_ln, w.post_ln_b, x, x, hp.eps);
    return x;
}

}  // namespace vkllm::vision
