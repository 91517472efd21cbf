// Mistral 3 (HF Mistral3ForConditionalGeneration): the text model as GGUF arch "mistral3" and the
// Pixtral vision tower with its projector as a "clip" mmproj (model-notes.md C.2, D.0, D.3;
// llama.cpp's conversion/mistral3.py and llava.py are what the reference files came from).
#include <map>

#include "convert/architectures.h"
#include "convert/vocab_keys.h"
#include "core/error.h"

namespace vkllm::convert {

namespace {

// Per-layer text tensors after "language_model.layers.N.".
const std::map<std::string_view, std::string_view, std::less<>> text_layer_names = {
    {"input_layernorm.weight", "attn_norm.weight"},
    {"post_attention_layernorm.weight", "ffn_norm.weight"},
    {"self_attn.q_proj.weight", "attn_q.weight"},
    {"self_attn.k_proj.weight", "attn_k.weight"},
    {"self_attn.v_proj.weight", "attn_v.weight"},
    {"self_attn.o_proj.weight", "attn_output.weight"},
    {"mlp.gate_proj.weight", "ffn_gate.weight"},
    {"mlp.up_proj.weight", "ffn_up.weight"},
    {"mlp.down_proj.weight", "ffn_down.weight"},
};

const std::map<std::string_view, std::string_view, std::less<>> text_names = {
    {"language_model.embed_tokens.weight", "token_embd.weight"},
    {"language_model.lm_head.weight", "output.weight"},
    {"language_model.norm.weight", "output_norm.weight"},
};

// Per-layer vision tensors after "vision_tower.transformer.layers.N.".
const std::map<std::string_view, std::string_view, std::less<>> vision_layer_names = {
    {"attention_norm.weight", "ln1.weight"},
    {"ffn_norm.weight", "ln2.weight"},
    {"attention.q_proj.weight", "attn_q.weight"},
    {"attention.k_proj.weight", "attn_k.weight"},
    {"attention.v_proj.weight", "attn_v.weight"},
    {"attention.o_proj.weight", "attn_out.weight"},
    {"feed_forward.gate_proj.weight", "ffn_gate.weight"},
    {"feed_forward.up_proj.weight", "ffn_up.weight"},
    {"feed_forward.down_proj.weight", "ffn_down.weight"},
};

const std::map<std::string_view, std::string_view, std::less<>> vision_names = {
    {"vision_tower.patch_conv.weight", "v.patch_embd.weight"},
    {"vision_tower.ln_pre.weight", "v.pre_ln.weight"},
    {"multi_modal_projector.norm.weight", "mm.input_norm.weight"},
    {"multi_modal_projector.patch_merger.merging_layer.weight", "mm.patch_merger.weight"},
    {"multi_modal_projector.linear_1.weight", "mm.1.weight"},
    {"multi_modal_projector.linear_1.bias", "mm.1.bias"},
    {"multi_modal_projector.linear_2.weight", "mm.2.weight"},
    {"multi_modal_projector.linear_2.bias", "mm.2.bias"},
};

bool is_vision(std::string_view name) {
    return name.starts_with("vision_tower.") || name.starts_with("multi_modal_projector.");
}

// Maps one tensor through a top-level and a per-layer table; nullopt when neither names it.
std::optional<std::string> gguf_name(std::string_view name, const auto& names, std::string_view layer_prefix,
                                     const auto& layer_names, std::string_view block_prefix) {
    if (auto it = names.find(name); it != names.end()) return std::string(it->second);
    if (auto layer = split_layer_name(name, layer_prefix))
        if (auto it = layer_names.find(layer->rest); it != layer_names.end())
            return fmt::format("{}{}.{}", block_prefix, layer->layer, it->second);
    return std::nullopt;
}

void add_text_keys(gguf::Writer& w, const ConfigSection& text) {
    const uint64_t n_head = text.u64("num_attention_heads");
    const uint64_t head_dim = text.opt_u64("head_dim").value_or(text.u64("hidden_size") / n_head);
    w.add_u32("mistral3.block_count", uint32_t(text.u64("num_hidden_layers")));
    w.add_u32("mistral3.context_length", uint32_t(text.u64("max_position_embeddings")));
    w.add_u32("mistral3.embedding_length", uint32_t(text.u64("hidden_size")));
    w.add_u32("mistral3.feed_forward_length", uint32_t(text.u64("intermediate_size")));
    w.add_u32("mistral3.attention.head_count", uint32_t(n_head));
    w.add_u32("mistral3.attention.head_count_kv", uint32_t(text.opt_u64("num_key_value_heads").value_or(n_head)));
    w.add_f32("mistral3.attention.layer_norm_rms_epsilon", float(text.number("rms_norm_eps")));
    w.add_u32("mistral3.attention.key_length", uint32_t(head_dim));
    w.add_u32("mistral3.attention.value_length", uint32_t(head_dim));
    w.add_u32("mistral3.rope.dimension_count", uint32_t(head_dim));

    const RopeConfig rope = read_rope(text);
    w.add_f32("mistral3.rope.freq_base", float(rope.theta));
    if (rope.type == "yarn") {
        w.add_string("mistral3.rope.scaling.type", "yarn");
        if (!rope.factor || !rope.original_context)
            fail("{}: YaRN RoPE needs factor and original_max_position_embeddings", text.where());
        w.add_f32("mistral3.rope.scaling.factor", float(*rope.factor));
        w.add_u32("mistral3.rope.scaling.original_context_length", uint32_t(*rope.original_context));
        if (rope.beta_fast) w.add_f32("mistral3.rope.scaling.yarn_beta_fast", float(*rope.beta_fast));
        if (rope.beta_slow) w.add_f32("mistral3.rope.scaling.yarn_beta_slow", float(*rope.beta_slow));
        if (rope.mscale_all_dim) w.add_f32("mistral3.rope.scaling.yarn_log_multiplier", float(*rope.mscale_all_dim));
    } else if (rope.type == "linear") {
        w.add_string("mistral3.rope.scaling.type", "linear");
        w.add_f32("mistral3.rope.scaling.factor", float(rope.factor.value_or(1.0)));
    } else if (rope.type != "default") {
        fail("{}: RoPE type '{}' is not supported (default, linear and yarn are)", text.where(), rope.type);
    }
    if (rope.llama_4_scaling_beta)
        w.add_f32("mistral3.attention.temperature_scale", float(*rope.llama_4_scaling_beta));
}

}  // namespace

Plan plan_mistral3(const Source& source) {
    const ConfigSection text = source.config.text();
    Plan plan;
    plan.metadata.add_string("general.architecture", "mistral3");
    add_text_keys(plan.metadata, text);
    const std::filesystem::path tekken = source.dir / "tekken.json";
    if (!std::filesystem::exists(tekken))
        fail("{}: no tekken.json (the Mistral 3 converter reads Mistral's tokenizer file)", source.dir.string());
    const size_t n_vocab = add_tekken_vocab(plan.metadata, tekken);
    plan.metadata.add_u32("mistral3.vocab_size", uint32_t(n_vocab));

    const uint64_t n_head = text.u64("num_attention_heads");
    const uint64_t n_head_kv = text.opt_u64("num_key_value_heads").value_or(n_head);
    for (const SafetensorsFile& file : source.checkpoint.files())
        for (const SafeTensor& t : file.tensors()) {
            const std::string name = normalized_name(t.name);
            if (is_vision(name)) continue;
            auto out = gguf_name(name, text_names, "language_model.", text_layer_names, "blk.");
            if (!out) fail("{}: tensor '{}' has no GGUF name in the Mistral 3 mapping", file.name(), t.name);
            // llama.cpp's rope runs on adjacent pairs; HF's rotate_half pairs the two halves of a head
            if (out->ends_with("attn_q.weight")) add_tensor(plan, *out, t, rope_permuted_rows(t, n_head));
            else if (out->ends_with("attn_k.weight")) add_tensor(plan, *out, t, rope_permuted_rows(t, n_head_kv));
            else add_tensor(plan, *out, t, copy_rows(t));
        }
    return plan;
}

Plan plan_pixtral_mmproj(const Source& source) {
    const std::optional<ConfigSection> vision = source.config.vision();
    if (!vision) fail("{}: no vision_config to make an mmproj from", source.config.root().where());
    const ConfigSection root = source.config.root();
    Plan plan = vision_encoder_plan(source, *vision);
    gguf::Writer& w = plan.metadata;
    w.add_string("clip.projector_type", "pixtral");
    w.add_f32("clip.vision.attention.layer_norm_epsilon", float(vision->opt_number("layer_norm_eps").value_or(1e-5)));
    if (vision->opt_string("hidden_act").value_or("silu") == "silu") w.add_bool("clip.use_silu", true);
    w.add_u32("clip.vision.spatial_merge_size", uint32_t(root.opt_u64("spatial_merge_size").value_or(1)));

    const uint64_t n_head = vision->u64("num_attention_heads");
    for (const SafetensorsFile& file : source.checkpoint.files())
        for (const SafeTensor& t : file.tensors()) {
            const std::string name = normalized_name(t.name);
            if (!is_vision(name)) continue;
            auto out = gguf_name(name, vision_names, "vision_tower.transformer.", vision_layer_names, "v.blk.");
            if (!out) fail("{}: tensor '{}' has no GGUF name in the Pixtral mapping", file.name(), t.name);
            const bool rope = out->ends_with("attn_q.weight") || out->ends_with("attn_k.weight");
            add_tensor(plan, *out, t, rope ? rope_permuted_rows(t, n_head) : copy_rows(t));
        }
    return plan;
}

}  // namespace vkllm::convert
