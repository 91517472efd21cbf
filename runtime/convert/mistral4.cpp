// Mistral Small 4 (HF Mistral3ForConditionalGeneration with text model_type "mistral4"): GGUF arch
// "mistral4", DeepSeek-V2's layout (model-notes.md C.4, C.5; llama.cpp's conversion/deepseek.py and
// mistral3.py): MLA attention whose kv_b_proj is split per head into attn_k_b (transposed) and
// attn_v_b, MoE layers with stacked experts after `first_k_dense_replace` dense ones.
#include <map>

#include "convert/architectures.h"
#include "convert/vocab_keys.h"
#include "core/error.h"

namespace vkllm::convert {

namespace {

const std::map<std::string_view, std::string_view, std::less<>> layer_names = {
    {"input_layernorm.weight", "attn_norm.weight"},
    {"post_attention_layernorm.weight", "ffn_norm.weight"},
    {"self_attn.q_proj.weight", "attn_q.weight"},
    {"self_attn.q_a_proj.weight", "attn_q_a.weight"},
    {"self_attn.q_a_layernorm.weight", "attn_q_a_norm.weight"},
    {"self_attn.q_b_proj.weight", "attn_q_b.weight"},
    {"self_attn.kv_a_proj_with_mqa.weight", "attn_kv_a_mqa.weight"},
    {"self_attn.kv_a_layernorm.weight", "attn_kv_a_norm.weight"},
    {"self_attn.o_proj.weight", "attn_output.weight"},
    {"mlp.gate_proj.weight", "ffn_gate.weight"},
    {"mlp.up_proj.weight", "ffn_up.weight"},
    {"mlp.down_proj.weight", "ffn_down.weight"},
    {"mlp.gate.weight", "ffn_gate_inp.weight"},
    {"mlp.gate.e_score_correction_bias", "exp_probs_b.bias"},
    {"mlp.experts.gate_up_proj", "ffn_gate_up_exps.weight"},
    {"mlp.experts.down_proj", "ffn_down_exps.weight"},
    {"mlp.shared_experts.gate_proj.weight", "ffn_gate_shexp.weight"},
    {"mlp.shared_experts.up_proj.weight", "ffn_up_shexp.weight"},
    {"mlp.shared_experts.down_proj.weight", "ffn_down_shexp.weight"},
};

const std::map<std::string_view, std::string_view, std::less<>> top_names = {
    {"language_model.embed_tokens.weight", "token_embd.weight"},
    {"language_model.lm_head.weight", "output.weight"},
    {"language_model.norm.weight", "output_norm.weight"},
};

struct MlaDims {
    uint64_t n_head, kv_lora, nope, rope, v_head;
};

MlaDims read_mla(const ConfigSection& text) {
    return {text.u64("num_attention_heads"), text.u64("kv_lora_rank"), text.u64("qk_nope_head_dim"),
            text.u64("qk_rope_head_dim"), text.u64("v_head_dim")};
}

void add_keys(gguf::Writer& w, const ConfigSection& text, const MlaDims& mla) {
    w.add_u32("mistral4.block_count", uint32_t(text.u64("num_hidden_layers")));
    w.add_u32("mistral4.context_length", uint32_t(text.u64("max_position_embeddings")));
    w.add_u32("mistral4.embedding_length", uint32_t(text.u64("hidden_size")));
    w.add_u32("mistral4.feed_forward_length", uint32_t(text.u64("intermediate_size")));
    w.add_u32("mistral4.attention.head_count", uint32_t(mla.n_head));
    w.add_u32("mistral4.attention.head_count_kv", 1);  // MQA over the shared latent
    w.add_f32("mistral4.attention.layer_norm_rms_epsilon", float(text.number("rms_norm_eps")));
    w.add_u32("mistral4.leading_dense_block_count", uint32_t(text.opt_u64("first_k_dense_replace").value_or(0)));
    if (auto q_lora = text.opt_u64("q_lora_rank")) w.add_u32("mistral4.attention.q_lora_rank", uint32_t(*q_lora));
    w.add_u32("mistral4.attention.kv_lora_rank", uint32_t(mla.kv_lora));
    // the KV cache rows hold [latent | k_pe]; per-head sizes go in the _mla keys
    w.add_u32("mistral4.attention.key_length", uint32_t(mla.kv_lora + mla.rope));
    w.add_u32("mistral4.attention.value_length", uint32_t(mla.kv_lora));
    w.add_u32("mistral4.attention.key_length_mla", uint32_t(mla.nope + mla.rope));
    w.add_u32("mistral4.attention.value_length_mla", uint32_t(mla.v_head));
    w.add_u32("mistral4.rope.dimension_count", uint32_t(mla.rope));
    w.add_u32("mistral4.expert_feed_forward_length", uint32_t(text.u64("moe_intermediate_size")));
    w.add_u32("mistral4.expert_count", uint32_t(text.u64("n_routed_experts")));
    w.add_u32("mistral4.expert_used_count", uint32_t(text.u64("num_experts_per_tok")));
    w.add_u32("mistral4.expert_shared_count", uint32_t(text.opt_u64("n_shared_experts").value_or(0)));
    w.add_f32("mistral4.expert_weights_scale", float(text.opt_number("routed_scaling_factor").value_or(1.0)));
    w.add_bool("mistral4.expert_weights_norm", text.opt_bool("norm_topk_prob").value_or(false));
    const std::string scoring = text.opt_string("scoring_func").value_or("softmax");
    if (scoring != "softmax" && scoring != "sigmoid")
        fail("{}.scoring_func '{}' is not softmax or sigmoid", text.where(), scoring);
    w.add_u32("mistral4.expert_gating_func", scoring == "softmax" ? 1 : 2);
    if (auto groups = text.opt_u64("n_group")) w.add_u32("mistral4.expert_group_count", uint32_t(*groups));
    if (auto used = text.opt_u64("topk_group")) w.add_u32("mistral4.expert_group_used_count", uint32_t(*used));

    const RopeConfig rope = read_rope(text);
    w.add_f32("mistral4.rope.freq_base", float(rope.theta));
    if (rope.type == "yarn") {
        if (!rope.factor || !rope.original_context)
            fail("{}: YaRN RoPE needs factor and original_max_position_embeddings", text.where());
        w.add_string("mistral4.rope.scaling.type", "yarn");
        w.add_f32("mistral4.rope.scaling.factor", float(*rope.factor));
        w.add_u32("mistral4.rope.scaling.original_context_length", uint32_t(*rope.original_context));
        // deepseek2's loader multiplies this key by 10 to recover mscale_all_dim
        w.add_f32("mistral4.rope.scaling.yarn_log_multiplier", float(0.1 * rope.mscale_all_dim.value_or(0.0)));
    } else if (rope.type != "default") {
        fail("{}: RoPE type '{}' is not supported (default and yarn are)", text.where(), rope.type);
    }
}

// kv_b_proj [n_head * (nope + v_head), kv_lora] split per head. attn_k_b {nope, kv_lora, n_head}
// holds each head's k rows transposed; attn_v_b {kv_lora, v_head, n_head} its v rows as they are.
void add_kv_b(Plan& plan, const std::string& blk, const SafeTensor& t, const MlaDims& mla) {
    const uint64_t per_head = mla.nope + mla.v_head;
    if (t.shape != std::vector<uint64_t>{mla.n_head * per_head, mla.kv_lora})
        fail("{}: tensor '{}' is not [{} x {}] as the config's MLA sizes say", t.file, t.name, mla.n_head * per_head,
             mla.kv_lora);
    plan.tensors.push_back({blk + "attn_k_b.weight", {mla.nope, mla.kv_lora, mla.n_head},
                            [&t, mla, per_head](uint64_t first, std::span<float> out) {
                                for (uint64_t i = 0; i < out.size(); ++i) {
                                    const uint64_t row = first + i / mla.nope, d = i % mla.nope;
                                    const uint64_t head = row / mla.kv_lora, r = row % mla.kv_lora;
                                    decode(t, (head * per_head + d) * mla.kv_lora + r, out.subspan(i, 1));
                                }
                            }});
    plan.tensors.push_back({blk + "attn_v_b.weight", {mla.kv_lora, mla.v_head, mla.n_head},
                            [&t, mla, per_head](uint64_t first, std::span<float> out) {
                                for (uint64_t i = 0; i < out.size() / mla.kv_lora; ++i) {
                                    const uint64_t row = first + i, head = row / mla.v_head, v = row % mla.v_head;
                                    decode(t, (head * per_head + mla.nope + v) * mla.kv_lora,
                                           out.subspan(i * mla.kv_lora, mla.kv_lora));
                                }
                            }});
}

}  // namespace

Plan plan_mistral4(const Source& source) {
    const ConfigSection text = source.config.text();
    const MlaDims mla = read_mla(text);
    Plan plan;
    plan.metadata.add_string("general.architecture", "mistral4");
    add_keys(plan.metadata, text, mla);
    const std::filesystem::path tekken = source.dir / "tekken.json";
    if (!std::filesystem::exists(tekken))
        fail("{}: no tekken.json (the Mistral Small 4 converter reads Mistral's tokenizer file)", source.dir.string());
    plan.metadata.add_u32("mistral4.vocab_size", uint32_t(add_tekken_vocab(plan.metadata, tekken)));

    for (const SafetensorsFile& file : source.checkpoint.files())
        for (const SafeTensor& t : file.tensors()) {
            const std::string name = normalized_name(t.name);
            if (name.starts_with("vision_tower.") || name.starts_with("multi_modal_projector.")) continue;
            if (auto it = top_names.find(name); it != top_names.end()) {
                add_tensor(plan, std::string(it->second), t, copy_rows(t));
                continue;
            }
            const auto layer = split_layer_name(name, "language_model.");
            if (!layer) fail("{}: tensor '{}' has no GGUF name in the Mistral Small 4 mapping", file.name(), t.name);
            const std::string blk = fmt::format("blk.{}.", layer->layer);
            if (layer->rest == "self_attn.kv_b_proj.weight") {
                add_kv_b(plan, blk, t, mla);
                continue;
            }
            auto it = layer_names.find(layer->rest);
            if (it == layer_names.end())
                fail("{}: tensor '{}' has no GGUF name in the Mistral Small 4 mapping", file.name(), t.name);
            add_tensor(plan, blk + std::string(it->second), t, copy_rows(t));
        }
    return plan;
}

}  // namespace vkllm::convert
