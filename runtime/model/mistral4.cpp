// Mistral Small 4 and DeepSeek-V2/V3 (GGUF archs "mistral4" and "deepseek2", one graph): multi-head
// latent attention with the KV up-projection absorbed, so each layer caches only the normalised latent
// and the rotated RoPE key of every token; YaRN with the attention scale llama.cpp rebuilds for MLA;
// dense SwiGLU leading layers, then a mixture of experts with a shared expert. DeepSeek files add
// sigmoid scoring with an expert bias, group-limited routing and the Llama-4 attention temperature,
// all from metadata. Numerics: ../shared/docs/model-notes.md C.4, C.5, B.4, B.5.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/error.h"
#include "model/architectures.h"
#include "model/blocks.h"
#include "model/hparams.h"
#include "model/mla.h"
#include "model/moe.h"
#include "ops/embed.h"
#include "ops/rope.h"

namespace vkllm::model {
namespace {

struct Hparams : BaseHparams, blocks::MoeLayers {
    uint32_t q_lora_rank = 0;   // attention.q_lora_rank; 0: a plain attn_q ("lite" models)
    uint32_t kv_lora_rank = 0;  // attention.kv_lora_rank: the cached latent
    uint32_t qk_nope = 0;       // attention.key_length_mla - rope.dimension_count
    uint32_t qk_rope = 0;       // rope.dimension_count
    uint32_t v_head_dim = 0;    // attention.value_length_mla
    ops::RopeConfig rope;
    float kq_scale = 0;
    float attn_temperature_scale = 0;  // q *= 1 + scale * ln(1 + floor(pos / length))
    uint32_t attn_temperature_length = 0;
};

struct LayerWeights : blocks::MoeLayerWeights {
    Weight attn_norm;                  // {n_embd}
    std::optional<Weight> attn_q_a;    // {n_embd, q_lora_rank}
    std::optional<Weight> attn_q_a_norm;  // {q_lora_rank}
    Weight attn_q;                     // attn_q_b {q_lora_rank, n_head*(nope+rope)} or attn_q {n_embd, ...}
    Weight attn_kv_a_mqa;              // {n_embd, kv_lora_rank + rope}
    Weight attn_kv_a_norm;             // {kv_lora_rank}
    Weight attn_k_b;                   // {nope, kv_lora_rank, n_head}
    Weight attn_v_b;                   // {kv_lora_rank, v_head_dim, n_head}
    Weight attn_output;                // {n_head*v_head_dim, n_embd}
};

struct Weights : EmbeddingWeights {
    std::vector<LayerWeights> layers;
    gpu::Buffer rope_phases;       // ops::rope_phase_table(hp.rope)
};

// YaRN as llama.cpp sets it up for these archs (B.4): the GGUF holds 0.1 * mscale_all_dim; RoPE gets
// the attention factor the context derives, and the softmax scale is rebuilt from it.
void read_rope_and_scale(const ArchKeys& keys, Hparams& hp) {
    hp.rope = read_rope(keys, hp.qk_rope, ops::RopeMode::Normal, /*read_yarn_betas=*/false);
    const float log_mul = keys.f32("rope.scaling.yarn_log_multiplier", 0.0f) / 0.1f;
    const float factor = 1.0f / hp.rope.freq_scale;
    auto mscale_of = [&](float m) { return factor <= 1.0f ? 1.0f : 1.0f + 0.1f * m * std::log(factor); };
    float attn_factor = 1.0f;
    if (hp.rope.ext_factor != 0.0f) {
        const float mscale = keys.arch() == "deepseek2" && log_mul != 1.0f ? log_mul : 1.0f;
        attn_factor = log_mul != 0.0f ? mscale_of(mscale) / mscale_of(log_mul) : mscale_of(1.0f);
        attn_factor /= 1.0f + 0.1f * std::log(factor);
    }
    hp.rope.attn_factor = attn_factor * keys.f32("rope.scaling.attn_factor", 1.0f);
    // models/deepseek2.cpp: undo the context's cancellation, then scale q.k by mscale^2.
    const float attn_factor_org = hp.rope.attn_factor * (1.0f + 0.1f * std::log(factor));
    const float mscale = attn_factor_org * (1.0f + 0.1f * log_mul * std::log(factor));
    hp.kq_scale = mscale * mscale / std::sqrt(float(hp.qk_nope + hp.qk_rope));
}

ops::MoeRouting read_routing(const ArchKeys& keys) {
    const uint32_t gating = keys.u32("expert_gating_func", 0);
    if (gating > 2) fail("{}: '{}' = {} (vkllm runs softmax 1 and sigmoid 2)", keys.file().name(),
                         keys.key("expert_gating_func"), gating);
    return {.n_expert = keys.u32("expert_count", 0),
            .n_expert_used = keys.u32("expert_used_count", 0),
            .scoring = gating == 2 ? ops::MoeScoring::Sigmoid : ops::MoeScoring::Softmax,
            .norm_topk = keys.file().get_bool(keys.key("expert_weights_norm")).value_or(false),
            .routed_scale = keys.f32("expert_weights_scale", 0.0f),
            .n_group = keys.u32("expert_group_count", 0),
            .n_group_used = keys.u32("expert_group_used_count", 0)};
}

Hparams read_hparams(const gguf::File& file, const std::string& arch) {
    ArchKeys keys(file, arch);
    Hparams hp{read_base_hparams(keys)};
    hp.q_lora_rank = keys.u32("attention.q_lora_rank", 0);
    hp.kv_lora_rank = keys.u32("attention.kv_lora_rank");
    hp.qk_rope = hp.n_rot;
    const uint32_t head_k = keys.u32("attention.key_length_mla", hp.head_dim_k);
    hp.v_head_dim = keys.u32("attention.value_length_mla", hp.head_dim_v);
    if (hp.n_head_kv != 1 || head_k <= hp.qk_rope || hp.qk_rope % 2 != 0 || hp.kv_lora_rank % 4 != 0 ||
        hp.qk_rope % 4 != 0 || (head_k - hp.qk_rope) % 4 != 0)
        fail("{}: MLA needs one KV head, an even RoPE part shorter than the {}-value key head and "
             "latent and head parts in multiples of 4 (kv_lora_rank {}, rope {})",
             file.name(), head_k, hp.kv_lora_rank, hp.qk_rope);
    hp.qk_nope = head_k - hp.qk_rope;
    hp.n_layer_dense_lead = std::min(keys.u32("leading_dense_block_count", 0), hp.n_layer);
    hp.routing = read_routing(keys);
    if (hp.n_layer_dense_lead < hp.n_layer) {
        hp.n_ff_exp = keys.u32("expert_feed_forward_length");
        hp.n_expert_shared = keys.u32("expert_shared_count");
        ops::check_moe_routing(hp.routing, file.name().c_str());
    }
    read_rope_and_scale(keys, hp);
    hp.attn_temperature_scale = keys.f32("attention.temperature_scale", 0.0f);
    hp.attn_temperature_length = keys.u32("attention.temperature_length", 0);
    if (hp.attn_temperature_scale != 0 && hp.attn_temperature_length == 0)
        fail("{}: '{}' is set but '{}' is missing or 0", file.name(), keys.key("attention.temperature_scale"),
             keys.key("attention.temperature_length"));
    return hp;
}

void load_attention(WeightLoader& loader, const gguf::File& file, const Hparams& hp, uint32_t il, LayerWeights& l) {
    auto name = [il](const char* tensor) { return fmt::format("blk.{}.{}.weight", il, tensor); };
    const uint64_t n_embd = hp.n_embd, R = hp.kv_lora_rank, q_rows = hp.n_head * (hp.qk_nope + hp.qk_rope);
    if (!loader.has(name("attn_k_b")) && loader.has(name("attn_kv_b")))
        fail("{}: tensor '{}' is the joint KV up-projection of older conversions; vkllm needs the split "
             "attn_k_b / attn_v_b (reconvert with a current llama.cpp)", file.name(), name("attn_kv_b"));
    l.attn_norm = loader.load(name("attn_norm"), {n_embd});
    if (hp.q_lora_rank) {
        l.attn_q_a = loader.load(name("attn_q_a"), {n_embd, hp.q_lora_rank});
        l.attn_q_a_norm = loader.load(name("attn_q_a_norm"), {hp.q_lora_rank});
        l.attn_q = loader.load(name("attn_q_b"), {hp.q_lora_rank, q_rows});
    } else {
        l.attn_q = loader.load(name("attn_q"), {n_embd, q_rows});
    }
    l.attn_kv_a_mqa = loader.load(name("attn_kv_a_mqa"), {n_embd, R + hp.qk_rope});
    l.attn_kv_a_norm = loader.load(name("attn_kv_a_norm"), {R});
    l.attn_k_b = loader.load(name("attn_k_b"), {hp.qk_nope, R, hp.n_head});
    l.attn_v_b = loader.load(name("attn_v_b"), {R, hp.v_head_dim, hp.n_head});
    l.attn_output = loader.load(name("attn_output"), {hp.n_head * hp.v_head_dim, n_embd});
}

Weights load_weights(gpu::Device& device, const gguf::File& file, const Hparams& hp, const LoadOptions& options) {
    WeightLoader loader(device, file, options.progress, options.placement);
    Weights w{loader.load_embeddings(hp.n_embd, hp.n_vocab)};
    w.layers.resize(hp.n_layer);
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        load_attention(loader, file, hp, il, w.layers[il]);
        blocks::load_feed_forward(loader, il, hp, hp, blocks::SelectionBias::Optional, w.layers[il]);
    }
    w.rope_phases = loader.rope_phases(hp.rope);
    loader.finish();
    return w;
}

// One row per token and layer, [latent | RoPE key]; no V cache (V is the latent).
KvLayout latent_kv_layout(const Hparams& hp) {
    return {std::vector<KvLayerLayout>(hp.n_layer, {.k_row = hp.kv_lora_rank + hp.qk_rope, .v_row = 0})};
}

class Mistral4 final : public ArchitectureModel<Hparams, Weights> {
public:
    Mistral4(gpu::Device& device, const gguf::File& file, const std::string& arch, const LoadOptions& options)
        : ArchitectureModel(device, file, arch, read_hparams(file, arch)) {
        load(file, options, load_weights);
    }

    KvLayout kv_layout() const override { return latent_kv_layout(hp_); }

    void build_forward(graph::Graph& g, const StepInputs& step, const KvCacheRegions& kv, graph::Region logits,
                       ForwardShape shape) const override {
        blocks::Builder b{g, device_, step, shape};
        auto x = g.transient("inp_embd", uint64_t(shape.n_tokens) * hp_.n_embd * sizeof(float));
        b.add("token_embd", ops::get_rows(device_, w_.token_embd.matrix(b.graph), step.ids, x, shape.n_tokens));
        const blocks::MlaSpec attention{
            .n_head = hp_.n_head, .kv_lora_rank = hp_.kv_lora_rank, .qk_nope = hp_.qk_nope, .qk_rope = hp_.qk_rope,
            .v_head_dim = hp_.v_head_dim, .kq_scale = hp_.kq_scale, .rope = hp_.rope,
            .rope_phases = g.persistent("rope_phases", w_.rope_phases.range()), .rms_eps = hp_.rms_eps,
            .temperature_beta = hp_.attn_temperature_scale, .temperature_length = hp_.attn_temperature_length};
        const blocks::MoeSpec moe{.routing = hp_.routing, .n_ff_exp = hp_.n_ff_exp,
                                  .n_ff_shexp = hp_.n_ff_exp * hp_.n_expert_shared};
        for (uint32_t il = 0; il < hp_.n_layer; ++il) {
            const LayerWeights& l = w_.layers[il];
            // x += attn(norm(x)): absorbed MLA over the latent cache
            blocks::attention_mla(b, int(il), x, {l.attn_norm, l.attn_q_a ? &*l.attn_q_a : nullptr,
                                                  l.attn_q_a_norm ? &*l.attn_q_a_norm : nullptr, l.attn_q,
                                                  l.attn_kv_a_mqa, l.attn_kv_a_norm, l.attn_k_b, l.attn_v_b,
                                                  l.attn_output},
                                  attention, kv.layers[il], kv.type);
            // x += ffn(norm(x)): dense SwiGLU in the leading layers, experts after
            if (il < hp_.n_layer_dense_lead) {
                blocks::ffn_glu(b, int(il), x, {l.ffn_norm, l.ffn_gate_up, *l.ffn_down}, ops::Glu::SwiGlu, hp_.n_ff,
                                hp_.rms_eps);
                continue;
            }
            auto normed = g.transient(fmt::format("blk.{}.ffn_norm_out", il), uint64_t(shape.n_tokens) * hp_.n_embd * 4);
            blocks::rms_norm(b, fmt::format("blk.{}.ffn_norm", il), x, l.ffn_norm, normed, hp_.n_embd, hp_.rms_eps);
            blocks::ffn_moe(b, int(il), normed, x, l.experts->weights(), moe);
        }
        blocks::output_head(b, x, w_.output_norm, w_.output ? *w_.output : w_.token_embd, logits, hp_.rms_eps);
    }
};

}  // namespace

std::unique_ptr<Model> make_mistral4(gpu::Device& device, const gguf::File& file, const std::string& arch,
                                     const LoadOptions& options) {
    return std::make_unique<Mistral4>(device, file, arch, options);
}

KvLayout mistral4_kv_layout(const gguf::File& file, const std::string& arch) {
    return latent_kv_layout(read_hparams(file, arch));
}

}  // namespace vkllm::model
