#include "model/hparams.h"

#include <cmath>

#include "core/error.h"

namespace vkllm::model {

ArchKeys::ArchKeys(const gguf::File& file, std::string arch) : file_(file), arch_(std::move(arch)) {}

uint32_t ArchKeys::u32(std::string_view suffix) const {
    auto value = file_.get_u32(key(suffix));
    if (!value) fail("{}: required key '{}' is missing", file_.name(), key(suffix));
    return *value;
}

uint32_t ArchKeys::u32(std::string_view suffix, uint32_t fallback) const {
    return file_.get_u32(key(suffix)).value_or(fallback);
}

float ArchKeys::f32(std::string_view suffix) const {
    auto value = optional_f32(suffix);
    if (!value) fail("{}: required key '{}' is missing", file_.name(), key(suffix));
    return *value;
}

float ArchKeys::f32(std::string_view suffix, float fallback) const { return optional_f32(suffix).value_or(fallback); }

std::optional<float> ArchKeys::optional_f32(std::string_view suffix) const {
    if (auto value = file_.get_f64(key(suffix))) return float(*value);
    return std::nullopt;
}

std::optional<std::string_view> ArchKeys::string(std::string_view suffix) const { return file_.get_string(key(suffix)); }

uint32_t ArchKeys::uniform_u32(std::string_view suffix, uint32_t fallback, uint32_t n_layer) const {
    const gguf::Value* value = file_.find(key(suffix));
    if (!value) return fallback;
    if (value->type != gguf::ValueType::Array) return u32(suffix);
    auto values = file_.get_u32_array(key(suffix));
    if (!values || values->size() != n_layer)
        fail("{}: '{}' has {} values for {} layers", file_.name(), key(suffix), value->count, n_layer);
    for (uint32_t v : *values)
        if (v != values->front())
            fail("{}: '{}' differs between layers, which this architecture does not support", file_.name(), key(suffix));
    return values->front();
}

BaseHparams read_base_hparams(const ArchKeys& keys, std::string_view eps_key) {
    BaseHparams hp;
    hp.n_ctx_train = keys.u32("context_length");
    hp.n_embd = keys.u32("embedding_length");
    hp.n_layer = keys.u32("block_count");
    if (hp.n_layer == 0 || hp.n_embd == 0) fail("{}: block_count and embedding_length must be positive", keys.file().name());
    hp.n_ff = keys.uniform_u32("feed_forward_length", 0, hp.n_layer);
    hp.n_head = keys.uniform_u32("attention.head_count", 0, hp.n_layer);
    if (hp.n_head == 0) fail("{}: '{}' must be positive", keys.file().name(), keys.key("attention.head_count"));
    hp.n_head_kv = keys.uniform_u32("attention.head_count_kv", hp.n_head, hp.n_layer);
    if (hp.n_head_kv == 0 || hp.n_head % hp.n_head_kv != 0)
        fail("{}: {} query heads cannot share {} KV heads", keys.file().name(), hp.n_head, hp.n_head_kv);
    hp.head_dim_k = keys.u32("attention.key_length", hp.n_embd / hp.n_head);
    hp.head_dim_v = keys.u32("attention.value_length", hp.n_embd / hp.n_head);
    hp.n_rot = keys.u32("rope.dimension_count", hp.head_dim_k);
    hp.rms_eps = keys.f32(eps_key);
    auto tokens = keys.file().get_string_array("tokenizer.ggml.tokens");
    hp.n_vocab = keys.u32("vocab_size", tokens ? uint32_t(tokens->size()) : 0);
    return hp;
}

ops::RopeConfig read_rope(const ArchKeys& keys, uint32_t n_rot, ops::RopeMode mode, bool read_yarn_betas) {
    ops::RopeConfig rope;
    rope.n_dims = n_rot;
    rope.mode = mode;
    rope.freq_base = keys.f32("rope.freq_base", 10000.0f);
    std::string_view type = keys.string("rope.scaling.type").value_or("linear");
    float factor = keys.optional_f32("rope.scaling.factor").value_or(keys.f32("rope.scale_linear", 0.0f));
    rope.freq_scale = factor == 0.0f || type == "none" ? 1.0f : 1.0f / factor;
    rope.n_ctx_orig = keys.u32("rope.scaling.original_context_length", keys.u32("context_length"));
    if (read_yarn_betas) {
        rope.beta_fast = keys.f32("rope.scaling.yarn_beta_fast", 32.0f);
        rope.beta_slow = keys.f32("rope.scaling.yarn_beta_slow", 1.0f);
    }
    if (type != "none" && type != "linear" && type != "yarn")
        fail("{}: RoPE scaling '{}' is not supported", keys.file().name(), std::string(type));

    // llama_context: YaRN turns extrapolation fully on and derives attn_factor (B.4).
    float attn_factor = 1.0f;
    if (type == "yarn") {
        rope.ext_factor = 1.0f;
        float scale = 1.0f / rope.freq_scale;
        auto mscale = [&](float m) { return scale <= 1.0f ? 1.0f : 1.0f + 0.1f * m * std::log(scale); };
        float log_multiplier = keys.f32("rope.scaling.yarn_log_multiplier", 0.0f);
        attn_factor = log_multiplier != 0.0f ? mscale(1.0f) / mscale(log_multiplier) : mscale(1.0f);
        attn_factor /= 1.0f + 0.1f * std::log(scale);
    }
    rope.attn_factor = attn_factor * keys.f32("rope.scaling.attn_factor", 1.0f);
    return rope;
}

}  // namespace vkllm::model
