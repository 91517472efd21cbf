// Gemma 3 (GGUF arch "gemma3"): five of every six layers attend to a sliding window only, with their
// own RoPE base, and keep a circular cache of that window (plus one prefill chunk); per-head QK
// RMSNorm, post-attention and post-FFN norms, GeGLU (tanh), embeddings scaled by sqrt(n_embd),
// optional final logit softcap, tied output. Numerics: ../shared/docs/model-notes.md C.3.
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/error.h"
#include "model/architectures.h"
#include "model/blocks.h"
#include "model/hparams.h"
#include "ops/elementwise.h"
#include "ops/rope.h"

namespace vkllm::model {
namespace {

struct Hparams : BaseHparams {
    uint32_t n_swa = 0;          // attention.sliding_window; 0: every layer global
    uint32_t swa_pattern = 6;    // layer il slides iff il % swa_pattern < swa_pattern - 1
    ops::RopeConfig rope_global;  // rope.freq_base and the file's scaling
    ops::RopeConfig rope_local;   // rope.freq_base_swa, unscaled
    float attn_scale = 0;        // query_pre_attn_scalar^-1/2 (kq_scale 1 in llama.cpp, q pre-scaled)
    float final_softcap = 0;     // final_logit_softcapping; 0: off

    bool sliding(uint32_t il) const { return n_swa != 0 && il % swa_pattern < swa_pattern - 1; }
};

struct LayerWeights {
    Weight attn_norm;            // {n_embd}
    WeightGroup attn_qkv;        // attn_q {n_embd, n_head*hd}, attn_k and attn_v {n_embd, n_head_kv*hd}
    Weight attn_q_norm;          // {hd}
    Weight attn_k_norm;          // {hd}
    Weight attn_output;          // {n_head*hd, n_embd}
    Weight post_attention_norm;  // {n_embd}
    Weight ffn_norm;             // {n_embd}
    WeightGroup ffn_gate_up;     // ffn_gate and ffn_up {n_embd, n_ff}
    Weight ffn_down;             // {n_ff, n_embd}
    Weight post_ffw_norm;        // {n_embd}
};

struct Weights : EmbeddingWeights {
    std::vector<LayerWeights> layers;
    gpu::Buffer rope_phases_global, rope_phases_local;  // ops::rope_phase_table of each
};

Hparams read_hparams(const gguf::File& file) {
    ArchKeys keys(file, "gemma3");
    Hparams hp{read_base_hparams(keys)};
    if (hp.n_rot != hp.head_dim_k)
        fail("{}: rope.dimension_count {} must equal the head size {}", file.name(), hp.n_rot, hp.head_dim_k);
    hp.n_swa = keys.u32("attention.sliding_window", 0);
    hp.swa_pattern = keys.u32("attention.sliding_window_pattern", 6);
    if (hp.swa_pattern == 0) fail("{}: {} must be positive", file.name(), keys.key("attention.sliding_window_pattern"));
    hp.rope_global = read_rope(keys, hp.n_rot, ops::RopeMode::Neox, /*read_yarn_betas=*/false);
    hp.rope_local = hp.rope_global;
    hp.rope_local.freq_base = keys.f32("rope.freq_base_swa", 10000.0f);
    hp.rope_local.freq_scale = 1.0f;
    // llama.cpp: 1/sqrt(n_embd / n_head) for the 62-layer 27B (query_pre_attn_scalar 168), else 1/sqrt(head_dim).
    hp.attn_scale = 1.0f / std::sqrt(float(hp.n_layer == 62 ? hp.n_embd / hp.n_head : hp.head_dim_k));
    hp.final_softcap = keys.f32("final_logit_softcapping", 0.0f);
    return hp;
}

// Sliding layers keep a window's worth of cells (model/session.h kv_layer_cells).
KvLayout kv_layout_of(const Hparams& hp) {
    KvLayout layout;
    for (uint32_t il = 0; il < hp.n_layer; ++il)
        layout.layers.push_back({.k_row = hp.n_head_kv * hp.head_dim_k, .v_row = hp.n_head_kv * hp.head_dim_v,
                                 .window = hp.sliding(il) ? hp.n_swa : 0});
    return layout;
}

Weights load_weights(gpu::Device& device, const gguf::File& file, const Hparams& hp, const LoadOptions& options) {
    WeightLoader loader(device, file, options.progress, options.placement);
    const uint64_t n_embd = hp.n_embd, hd = hp.head_dim_k;
    const uint32_t q_rows = hp.n_head * hp.head_dim_k, kv_rows = hp.n_head_kv * hp.head_dim_k;
    Weights w{loader.load_embeddings(hp.n_embd, hp.n_vocab)};
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        auto name = [il](const char* tensor) { return fmt::format("blk.{}.{}.weight", il, tensor); };
        const std::pair<std::string, uint32_t> qkv[] = {
            {name("attn_q"), q_rows}, {name("attn_k"), kv_rows}, {name("attn_v"), hp.n_head_kv * hp.head_dim_v}};
        const std::pair<std::string, uint32_t> gate_up[] = {{name("ffn_gate"), hp.n_ff}, {name("ffn_up"), hp.n_ff}};
        w.layers.push_back({
            .attn_norm = loader.load(name("attn_norm"), {n_embd}),
            .attn_qkv = loader.load_group(qkv, hp.n_embd),
            .attn_q_norm = loader.load(name("attn_q_norm"), {hd}),
            .attn_k_norm = loader.load(name("attn_k_norm"), {hd}),
            .attn_output = loader.load(name("attn_output"), {hp.n_head * hp.head_dim_v, n_embd}),
            .post_attention_norm = loader.load(name("post_attention_norm"), {n_embd}),
            .ffn_norm = loader.load(name("ffn_norm"), {n_embd}),
            .ffn_gate_up = loader.load_group(gate_up, hp.n_embd),
            .ffn_down = loader.load(name("ffn_down"), {hp.n_ff, n_embd}),
            .post_ffw_norm = loader.load(name("post_ffw_norm"), {n_embd}),
        });
    }
    w.rope_phases_global = loader.rope_phases(hp.rope_global);
    w.rope_phases_local = loader.rope_phases(hp.rope_local);
    loader.finish();
    return w;
}

class Gemma3 final : public ArchitectureModel<Hparams, Weights> {
public:
    Gemma3(gpu::Device& device, const gguf::File& file, const LoadOptions& options)
        : ArchitectureModel(device, file, "gemma3", read_hparams(file)) {
        load(file, options, load_weights);
    }

    KvLayout kv_layout() const override { return kv_layout_of(hp_); }

    void build_forward(graph::Graph& g, const StepInputs& step, const KvCacheRegions& kv, graph::Region logits,
                       ForwardShape shape) const override {
        blocks::Builder b{g, device_, step, shape};
        const uint32_t n_embd_values = shape.n_tokens * hp_.n_embd;
        auto x = g.transient("inp_embd", uint64_t(n_embd_values) * sizeof(float));
        // x = token_embd[ids] * sqrt(n_embd); an image's embeddings are taken as they are
        blocks::input_embeddings(b, w_.token_embd, x);
        if (!step.embeddings)
            g.add("inp_scaled", ops::scale(device_, x, x, n_embd_values, std::sqrt(float(hp_.n_embd))));

        // An image's tokens see each other both ways (llama.cpp decodes them with causal attention off).
        const ops::AttentionConfig config{.n_head = hp_.n_head, .n_head_kv = hp_.n_head_kv,
                                          .head_dim_k = hp_.head_dim_k, .head_dim_v = hp_.head_dim_v,
                                          .scale = hp_.attn_scale, .causal = !step.embeddings};
        ops::AttentionConfig sliding_config = config;
        sliding_config.n_swa = hp_.n_swa;
        const blocks::AttentionSpec global{.config = config, .rope = hp_.rope_global,
                                           .rope_phases = g.persistent("rope_phases", w_.rope_phases_global.range()),
                                           .rms_eps = hp_.rms_eps};
        const blocks::AttentionSpec local{.config = sliding_config, .rope = hp_.rope_local,
                                          .rope_phases = g.persistent("rope_phases_swa", w_.rope_phases_local.range()),
                                          .rms_eps = hp_.rms_eps};
        for (uint32_t il = 0; il < hp_.n_layer; ++il) {
            const LayerWeights& l = w_.layers[il];
            // x += post_attention_norm(attn(norm(x))), sliding layers over their window with the local RoPE
            blocks::attention_gqa(b, int(il), x,
                                  {.norm = l.attn_norm, .qkv = l.attn_qkv, .output = l.attn_output,
                                   .q_norm = &l.attn_q_norm, .k_norm = &l.attn_k_norm,
                                   .post_norm = &l.post_attention_norm},
                                  hp_.sliding(il) ? local : global, kv.layers[il], kv.type);
            // x += post_ffw_norm(down(gelu_tanh(gate(norm(x))) * up(norm(x))))
            blocks::ffn_glu(b, int(il), x, {l.ffn_norm, l.ffn_gate_up, l.ffn_down, &l.post_ffw_norm}, ops::Glu::GeGlu,
                            hp_.n_ff, hp_.rms_eps);
        }
        blocks::output_head(b, x, w_.output_norm, w_.output ? *w_.output : w_.token_embd, logits, hp_.rms_eps);
        if (hp_.final_softcap != 0 && !shape.hidden) {
            const uint32_t rows = shape.all_logits ? shape.n_tokens : 1;
            g.add("final_softcap", ops::softcap(device_, logits, logits, rows * hp_.n_vocab, hp_.final_softcap));
        }
    }
};

}  // namespace

KvLayout gemma3_kv_layout(const gguf::File& file, const std::string&) { return kv_layout_of(read_hparams(file)); }

std::unique_ptr<Model> make_gemma3(gpu::Device& device, const gguf::File& file, const std::string&,
                                   const LoadOptions& options) {
    return std::make_unique<Gemma3>(device, file, options);
}

}  // namespace vkllm::model
