// Gemma 3 (HF Gemma3ForCausalLM, and the text model of Gemma3ForConditionalGeneration): GGUF arch
// "gemma3" (model-notes.md C.3; llama.cpp's conversion/gemma.py `Gemma3Model`). Gemma's RMSNorm
// scales by (1 + w), so every norm is stored plus one; RoPE is NeoX (no Q/K permutation); the output
// is tied to the embeddings, whose rows past the vocabulary are dropped. The SigLIP vision tower with
// Gemma's projector becomes a "clip" mmproj of projector type gemma3 (D.2; `Gemma3VisionModel`).
#include <cmath>
#include <map>

#include "convert/architectures.h"
#include "convert/vocab_keys.h"
#include "core/error.h"

namespace vkllm::convert {

namespace {

struct LayerTensor {
    std::string_view gguf_name;
    bool plus_one;  // a Gemma RMSNorm weight
};

// Per-layer tensors after "layers.N.".
const std::map<std::string_view, LayerTensor, std::less<>> layer_names = {
    {"input_layernorm.weight", {"attn_norm.weight", true}},
    {"self_attn.q_proj.weight", {"attn_q.weight", false}},
    {"self_attn.k_proj.weight", {"attn_k.weight", false}},
    {"self_attn.v_proj.weight", {"attn_v.weight", false}},
    {"self_attn.q_norm.weight", {"attn_q_norm.weight", true}},
    {"self_attn.k_norm.weight", {"attn_k_norm.weight", true}},
    {"self_attn.o_proj.weight", {"attn_output.weight", false}},
    {"post_attention_layernorm.weight", {"post_attention_norm.weight", true}},
    {"pre_feedforward_layernorm.weight", {"ffn_norm.weight", true}},
    {"mlp.gate_proj.weight", {"ffn_gate.weight", false}},
    {"mlp.up_proj.weight", {"ffn_up.weight", false}},
    {"mlp.down_proj.weight", {"ffn_down.weight", false}},
    {"post_feedforward_layernorm.weight", {"post_ffw_norm.weight", true}},
};

// transformers' Gemma3TextConfig defaults, which llama.cpp's converter sees through AutoConfig
// (published configs leave head counts, head_dim, vocab_size and rope_theta to them).
constexpr uint64_t default_n_head = 8, default_n_head_kv = 4, default_head_dim = 256, default_n_ctx = 131072,
                   default_n_vocab = 262208, default_sliding_window = 4096;
constexpr double default_rope_theta = 1e6, default_rms_eps = 1e-6;

// The global layers' RoPE; transformers 5 nests it under rope_parameters.full_attention. The local
// layers' base (rope_local_base_freq) is not written: llama.cpp's loader default, 10000, is Gemma 3's.
struct GlobalRope {
    double theta = default_rope_theta;
    std::optional<double> linear_factor;
};

GlobalRope read_global_rope(const ConfigSection& text) {
    GlobalRope rope;
    rope.theta = text.opt_number("rope_theta").value_or(rope.theta);
    std::optional<ConfigSection> scaling = text.section("rope_scaling");
    if (auto params = text.section("rope_parameters")) scaling = params->section("full_attention").value_or(*params);
    if (!scaling) return rope;
    rope.theta = scaling->opt_number("rope_theta").value_or(rope.theta);
    const std::string type = scaling->opt_string("rope_type").value_or(scaling->opt_string("type").value_or("default"));
    if (type == "linear") rope.linear_factor = scaling->number("factor");
    else if (type != "default") fail("{}: RoPE type '{}' is not supported for Gemma 3 (linear is)", scaling->where(), type);
    return rope;
}

void add_keys(gguf::Writer& w, const ConfigSection& text) {
    const uint64_t head_dim = text.opt_u64("head_dim").value_or(default_head_dim);
    w.add_u32("gemma3.context_length", uint32_t(text.opt_u64("max_position_embeddings").value_or(default_n_ctx)));
    w.add_u32("gemma3.embedding_length", uint32_t(text.u64("hidden_size")));
    w.add_u32("gemma3.block_count", uint32_t(text.u64("num_hidden_layers")));
    w.add_u32("gemma3.feed_forward_length", uint32_t(text.u64("intermediate_size")));
    w.add_u32("gemma3.attention.head_count", uint32_t(text.opt_u64("num_attention_heads").value_or(default_n_head)));
    w.add_f32("gemma3.attention.layer_norm_rms_epsilon", float(text.opt_number("rms_norm_eps").value_or(default_rms_eps)));
    w.add_u32("gemma3.attention.key_length", uint32_t(head_dim));
    w.add_u32("gemma3.attention.value_length", uint32_t(head_dim));
    const GlobalRope rope = read_global_rope(text);
    w.add_f32("gemma3.rope.freq_base", float(rope.theta));
    if (text.has("attn_logit_softcapping"))
        fail("{}: attn_logit_softcapping is set, which Gemma 3 does not have", text.where());
    w.add_u32("gemma3.attention.sliding_window",
              uint32_t(text.opt_u64("sliding_window").value_or(default_sliding_window)));
    w.add_u32("gemma3.attention.head_count_kv",
              uint32_t(text.opt_u64("num_key_value_heads").value_or(default_n_head_kv)));
    if (rope.linear_factor) {  // applies to the global layers only
        w.add_string("gemma3.rope.scaling.type", "linear");
        w.add_f32("gemma3.rope.scaling.factor", float(*rope.linear_factor));
    }
    // llama.cpp's converter leaves this out (no Gemma 3 sets it); its loader applies it when present
    if (auto softcap = text.opt_number("final_logit_softcapping"))
        w.add_f32("gemma3.final_logit_softcapping", float(*softcap));
}

bool is_vision(std::string_view name) {
    return name.starts_with("vision_tower.") || name.starts_with("multi_modal_projector.") ||
           name.starts_with("multimodal_projector.") || name.starts_with("vision_model.");
}

// The text model's name without the wrappers of either class: "embed_tokens.weight", "layers.N.*".
std::string_view text_name(std::string_view name) {
    if (name.starts_with("language_model.")) name.remove_prefix(15);
    if (name.starts_with("model.")) name.remove_prefix(6);
    return name;
}

// Vision tensors after "vision_tower.vision_model." and "encoder.layers.N.".
const std::map<std::string_view, std::string_view, std::less<>> vision_names = {
    {"embeddings.patch_embedding.weight", "v.patch_embd.weight"},
    {"embeddings.patch_embedding.bias", "v.patch_embd.bias"},
    {"embeddings.position_embedding.weight", "v.position_embd.weight"},
    {"post_layernorm.weight", "v.post_ln.weight"},
    {"post_layernorm.bias", "v.post_ln.bias"},
};

const std::map<std::string_view, std::string_view, std::less<>> vision_layer_names = {
    {"layer_norm1.weight", "ln1.weight"},         {"layer_norm1.bias", "ln1.bias"},
    {"self_attn.q_proj.weight", "attn_q.weight"}, {"self_attn.q_proj.bias", "attn_q.bias"},
    {"self_attn.k_proj.weight", "attn_k.weight"}, {"self_attn.k_proj.bias", "attn_k.bias"},
    {"self_attn.v_proj.weight", "attn_v.weight"}, {"self_attn.v_proj.bias", "attn_v.bias"},
    {"self_attn.out_proj.weight", "attn_out.weight"}, {"self_attn.out_proj.bias", "attn_out.bias"},
    {"layer_norm2.weight", "ln2.weight"},         {"layer_norm2.bias", "ln2.bias"},
    {"mlp.fc1.weight", "ffn_up.weight"},          {"mlp.fc1.bias", "ffn_up.bias"},
    {"mlp.fc2.weight", "ffn_down.weight"},        {"mlp.fc2.bias", "ffn_down.bias"},
};

// The projector's pooling: image_size / patch_size patches per side pooled to sqrt(image_seq_length).
uint32_t projector_scale_factor(const Source& source, const ConfigSection& vision) {
    const auto path = source.dir / "preprocessor_config.json";
    const nlohmann::json preprocessor = read_json_file(path);
    const nlohmann::json length = preprocessor.value("image_seq_length", nlohmann::json(256));
    if (!length.is_number_unsigned() || length.get<uint64_t>() == 0)
        fail("{}: image_seq_length is not a positive integer", path.string());
    const uint64_t patch_size = vision.u64("patch_size");
    if (patch_size == 0) fail("{}.patch_size is 0", vision.where());
    const auto per_side = uint64_t(std::sqrt(double(length.get<uint64_t>())));
    return uint32_t(vision.u64("image_size") / patch_size / per_side);
}

// One vision tensor's GGUF name, rows and the type llama.cpp forces on it; nullopt for the unused
// SigLIP head (tinygemma3's).
std::optional<PlannedTensor> vision_tensor(const SafeTensor& t, std::string_view name) {
    const auto planned = [&](std::string gguf_name, RowSource rows, std::optional<gguf::GgmlType> type = {}) {
        return PlannedTensor{std::move(gguf_name), ggml_shape(t), std::move(rows), {}, {}, type};
    };
    if (name == "multi_modal_projector.mm_input_projection_weight")
        return planned("mm.input_projection.weight", copy_rows(t), gguf::GgmlType::F16);
    if (name == "multi_modal_projector.mm_soft_emb_norm.weight")  // Gemma's RMSNorm, unlike SigLIP's
        return planned("mm.soft_emb_norm.weight", plus_one_rows(t));
    constexpr std::string_view tower = "vision_tower.vision_model.";
    if (name.starts_with(tower)) {
        const std::string_view rest = name.substr(tower.size());
        if (rest.starts_with("head.")) return std::nullopt;
        if (auto it = vision_names.find(rest); it != vision_names.end())  // ".embeddings." stay F32
            return planned(std::string(it->second), copy_rows(t),
                           rest.starts_with("embeddings.") ? std::optional(gguf::GgmlType::F32) : std::nullopt);
        if (auto layer = split_layer_name(rest, "encoder."))
            if (auto it = vision_layer_names.find(layer->rest); it != vision_layer_names.end())
                return planned(fmt::format("v.blk.{}.{}", layer->layer, it->second), copy_rows(t));
    }
    fail("{}: tensor '{}' has no GGUF name in the Gemma 3 vision mapping", t.file, t.name);
}

}  // namespace

Plan plan_gemma3_mmproj(const Source& source) {
    const std::optional<ConfigSection> vision = source.config.vision();
    if (!vision) fail("{}: no vision_config to make an mmproj from", source.config.root().where());
    Plan plan = vision_encoder_plan(source, *vision);
    gguf::Writer& w = plan.metadata;
    w.add_string("clip.projector_type", "gemma3");
    w.add_f32("clip.vision.attention.layer_norm_epsilon", float(vision->opt_number("layer_norm_eps").value_or(1e-6)));
    w.add_bool("clip.use_gelu", true);
    // written only when it is not the default, 4 (tiny test models)
    if (const uint32_t factor = projector_scale_factor(source, *vision); factor > 0 && factor != 4)
        w.add_u32("clip.vision.projector.scale_factor", factor);
    for (const SafetensorsFile& file : source.checkpoint.files())
        for (const SafeTensor& t : file.tensors()) {
            const std::string name = normalized_name(t.name);
            if (!is_vision(name)) continue;
            if (std::optional<PlannedTensor> planned = vision_tensor(t, name)) plan.tensors.push_back(std::move(*planned));
        }
    return plan;
}

Plan plan_gemma3(const Source& source) {
    const ConfigSection text = source.config.text();
    Plan plan;
    plan.metadata.add_string("general.architecture", "gemma3");
    add_keys(plan.metadata, text);
    const uint64_t n_vocab =
        add_sentencepiece_vocab(plan.metadata, source.dir, text.opt_u64("vocab_size").value_or(default_n_vocab));
    plan.metadata.add_bool("tokenizer.ggml.add_space_prefix", false);

    for (const SafetensorsFile& file : source.checkpoint.files())
        for (const SafeTensor& t : file.tensors()) {
            const std::string normalized = normalized_name(t.name);
            if (is_vision(normalized)) continue;
            const std::string_view name = text_name(normalized);
            if (name == "embed_tokens.weight") {
                std::vector<uint64_t> ne = ggml_shape(t);
                if (ne.size() != 2 || ne[1] < n_vocab)
                    fail("{}: tensor '{}' has fewer rows than the {} tokens of the vocabulary", file.name(), t.name,
                         n_vocab);
                ne[1] = n_vocab;  // rows past the vocabulary are never looked up
                plan.tensors.push_back({"token_embd.weight", ne, copy_rows(t)});
            } else if (name == "norm.weight") {
                add_tensor(plan, "output_norm.weight", t, plus_one_rows(t));
            } else if (name == "lm_head.weight") {
                add_tensor(plan, "output.weight", t, copy_rows(t));
            } else {
                const auto layer = split_layer_name(name, "");
                const auto it = layer ? layer_names.find(layer->rest) : layer_names.end();
                if (it == layer_names.end())
                    fail("{}: tensor '{}' has no GGUF name in the Gemma 3 mapping", file.name(), t.name);
                add_tensor(plan, fmt::format("blk.{}.{}", layer->layer, it->second.gguf_name), t,
                           it->second.plus_one ? plus_one_rows(t) : copy_rows(t));
            }
        }
    return plan;
}

}  // namespace vkllm::convert
