// LLaMA and Mistral 3 (GGUF archs "llama" and "mistral3"): GQA, RoPE in adjacent pairs with optional
// YaRN, SwiGLU (or Mixtral-style experts: softmax routing, top-k, normalised weights), tied or separate
// LM head; Mistral 3 adds the Llama-4 attention temperature.
// Numerics: ../shared/docs/model-notes.md C.1, C.2, B.4, B.5.
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "core/error.h"
#include "model/blocks.h"
#include "model/hparams.h"
#include "model/moe.h"
#include "model/architectures.h"
#include "ops/embed.h"
#include "ops/rope.h"

namespace vkllm::model {
namespace {

struct Hparams : BaseHparams {
    ops::RopeConfig rope;
    float attn_temperature_scale = 0;  // mistral3: q *= 1 + scale * ln(1 + floor(pos / length))
    uint32_t attn_temperature_length = 0;
    uint32_t n_expert = 0, n_expert_used = 0;  // expert_count, expert_used_count; 0: a dense FFN
};

struct LayerWeights {
    Weight attn_norm;         // {n_embd}
    WeightGroup attn_qkv;     // attn_q {n_embd, n_head*hd}, attn_k and attn_v {n_embd, n_head_kv*hd}
    Weight attn_output;       // {n_head*hd, n_embd}
    Weight ffn_norm;          // {n_embd}
    WeightGroup ffn_gate_up;  // ffn_gate and ffn_up {n_embd, n_ff} (dense)
    Weight ffn_down;          // {n_ff, n_embd} (dense); ffn_down_exps {n_ff, n_embd, n_expert} (MoE)
    Weight ffn_gate_inp;      // {n_embd, n_expert} (MoE)
    Weight ffn_gate_exps;     // {n_embd, n_ff, n_expert} (MoE)
    Weight ffn_up_exps;       // {n_embd, n_ff, n_expert} (MoE)
};

struct Weights : EmbeddingWeights {
    std::vector<LayerWeights> layers;
    gpu::Buffer rope_phases;       // ops::rope_phase_table(hp.rope)
};

Hparams read_hparams(const gguf::File& file, const std::string& arch) {
    ArchKeys keys(file, arch);
    Hparams hp{read_base_hparams(keys)};
    if (hp.n_rot != hp.head_dim_k) fail("{}: rope.dimension_count {} must equal the head size {}", file.name(), hp.n_rot, hp.head_dim_k);
    hp.rope = read_rope(keys, hp.n_rot, ops::RopeMode::Normal, /*read_yarn_betas=*/arch == "mistral3");
    if (const gguf::Tensor* freqs = file.find_tensor("rope_freqs.weight")) {
        if (freqs->type != gguf::GgmlType::F32 || freqs->n_elements() != hp.n_rot / 2)
            fail("{}: rope_freqs.weight must hold {} F32 values", file.name(), hp.n_rot / 2);
        hp.rope.freq_factors.resize(hp.n_rot / 2);
        std::memcpy(hp.rope.freq_factors.data(), freqs->data.data(), freqs->nbytes);
    }
    hp.n_expert = keys.u32("expert_count", 0);
    hp.n_expert_used = keys.u32("expert_used_count", 0);
    if (hp.n_expert > 0 && (hp.n_expert_used == 0 || hp.n_expert_used > hp.n_expert))
        fail("{}: {} uses {} of {} experts", file.name(), keys.key("expert_used_count"), hp.n_expert_used, hp.n_expert);
    if (arch == "mistral3") {
        hp.attn_temperature_scale = keys.f32("attention.temperature_scale", 0.0f);
        hp.attn_temperature_length = hp.rope.n_ctx_orig;
        if (hp.attn_temperature_scale != 0 && hp.attn_temperature_length == 0)
            fail("{}: attention temperature needs rope.scaling.original_context_length", file.name());
    }
    return hp;
}

void refuse_unsupported(const gguf::File& file) {
    for (const char* name : {"blk.0.attn_qkv.weight", "blk.0.attn_q.bias"})
        if (file.find_tensor(name))
            fail("{}: tensor '{}' (fused QKV or attention biases) is not supported for this architecture yet",
                 file.name(), name);
}

Weights load_weights(gpu::Device& device, const gguf::File& file, const Hparams& hp, const LoadOptions& options) {
    WeightLoader loader(device, file, options.progress, options.placement);
    const uint64_t n_embd = hp.n_embd, q_rows = hp.n_head * hp.head_dim_k, kv_rows = hp.n_head_kv * hp.head_dim_k;
    const uint64_t v_rows = hp.n_head_kv * hp.head_dim_v;
    Weights w{loader.load_embeddings(hp.n_embd, hp.n_vocab)};
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        auto name = [il](const char* tensor) { return fmt::format("blk.{}.{}.weight", il, tensor); };
        const std::pair<std::string, uint32_t> qkv[] = {
            {name("attn_q"), uint32_t(q_rows)}, {name("attn_k"), uint32_t(kv_rows)}, {name("attn_v"), uint32_t(v_rows)}};
        const std::pair<std::string, uint32_t> gate_up[] = {{name("ffn_gate"), hp.n_ff}, {name("ffn_up"), hp.n_ff}};
        LayerWeights& l = w.layers.emplace_back();
        l.attn_norm = loader.load(name("attn_norm"), {n_embd});
        l.attn_qkv = loader.load_group(qkv, hp.n_embd);
        l.attn_output = loader.load(name("attn_output"), {hp.n_head * hp.head_dim_v, n_embd});
        l.ffn_norm = loader.load(name("ffn_norm"), {n_embd});
        if (hp.n_expert == 0) {
            l.ffn_gate_up = loader.load_group(gate_up, hp.n_embd);
            l.ffn_down = loader.load(name("ffn_down"), {hp.n_ff, n_embd});
        } else {
            l.ffn_gate_inp = loader.load(name("ffn_gate_inp"), {n_embd, hp.n_expert});
            l.ffn_gate_exps = loader.load(name("ffn_gate_exps"), {n_embd, hp.n_ff, hp.n_expert});
            l.ffn_up_exps = loader.load(name("ffn_up_exps"), {n_embd, hp.n_ff, hp.n_expert});
            l.ffn_down = loader.load(name("ffn_down_exps"), {hp.n_ff, n_embd, hp.n_expert});
        }
    }
    w.rope_phases = loader.rope_phases(hp.rope);
    loader.finish();
    return w;
}

KvLayout kv_layout_of(const Hparams& hp) {
    return {std::vector<KvLayerLayout>(hp.n_layer, {.k_row = hp.n_head_kv * hp.head_dim_k, .v_row = hp.n_head_kv * hp.head_dim_v})};
}

class Llama final : public ArchitectureModel<Hparams, Weights> {
public:
    Llama(gpu::Device& device, const gguf::File& file, const std::string& arch, const LoadOptions& options)
        : ArchitectureModel(device, file, arch, read_hparams(file, arch)) {
        refuse_unsupported(file);
        load(file, options, load_weights);
    }

    KvLayout kv_layout() const override { return kv_layout_of(hp_); }

    void build_forward(graph::Graph& g, const StepInputs& step, const KvCacheRegions& kv, graph::Region logits,
                       ForwardShape shape) const override {
        blocks::Builder b{g, device_, step, shape};
        auto x = g.transient("inp_embd", uint64_t(shape.n_tokens) * hp_.n_embd * sizeof(float));
        blocks::input_embeddings(b, w_.token_embd, x);
        const blocks::AttentionSpec attention{
            .config = {hp_.n_head, hp_.n_head_kv, hp_.head_dim_k, hp_.head_dim_v, 1.0f / std::sqrt(float(hp_.head_dim_k))},
            .rope = hp_.rope,
            .rope_phases = g.persistent("rope_phases", w_.rope_phases.range()),
            .rms_eps = hp_.rms_eps,
            .temperature_beta = hp_.attn_temperature_scale,
            .temperature_length = hp_.attn_temperature_length,
        };
        for (uint32_t il = 0; il < hp_.n_layer; ++il) {
            const LayerWeights& l = w_.layers[il];
            // x += attn(norm(x)); x += ffn(norm(x))
            blocks::attention_gqa(b, int(il), x, {l.attn_norm, l.attn_qkv, l.attn_output}, attention, kv.layers[il], kv.type);
            if (hp_.n_expert == 0) {
                blocks::ffn_glu(b, int(il), x, {l.ffn_norm, l.ffn_gate_up, l.ffn_down}, ops::Glu::SwiGlu, hp_.n_ff, hp_.rms_eps);
                continue;
            }
            // Mixtral: softmax over the experts, the top n_expert_used renormalised (llama.cpp's norm_w).
            auto normed = g.transient(fmt::format("blk.{}.ffn_norm_out", il), uint64_t(shape.n_tokens) * hp_.n_embd * sizeof(float));
            blocks::rms_norm(b, fmt::format("blk.{}.ffn_norm", il), x, l.ffn_norm, normed, hp_.n_embd, hp_.rms_eps);
            const blocks::MoeSpec moe{.routing = {.n_expert = hp_.n_expert, .n_expert_used = hp_.n_expert_used,
                                                  .scoring = ops::MoeScoring::Softmax, .norm_topk = true},
                                      .n_ff_exp = hp_.n_ff};
            blocks::ffn_moe(b, int(il), normed, x, {.gate_inp = l.ffn_gate_inp, .gate_exps = &l.ffn_gate_exps,
                                                    .up_exps = &l.ffn_up_exps, .down_exps = l.ffn_down}, moe);
        }
        blocks::output_head(b, x, w_.output_norm, w_.output ? *w_.output : w_.token_embd, logits, hp_.rms_eps);
    }
};

}  // namespace

std::unique_ptr<Model> make_llama(gpu::Device& device, const gguf::File& file, const std::string& arch,
                                  const LoadOptions& options) {
    return std::make_unique<Llama>(device, file, arch, options);
}

KvLayout llama_kv_layout(const gguf::File& file, const std::string& arch) { return kv_layout_of(read_hparams(file, arch)); }

}  // namespace vkllm::model
