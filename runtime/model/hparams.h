#pragma once
// Hyperparameters as llama.cpp reads them (model-notes.md C.0, B.4, B.5): `<arch>.<key>` with its
// defaults, and the RoPE parameters derived from the rope.* keys.
#include <optional>
#include <string>
#include <string_view>

#include "gguf/reader.h"
#include "ops/rope_config.h"

namespace vkllm::model {

// Reads keys under one architecture's prefix; errors name the full key and the file.
class ArchKeys {
public:
    ArchKeys(const gguf::File& file, std::string arch);

    const gguf::File& file() const { return file_; }
    const std::string& arch() const { return arch_; }
    std::string key(std::string_view suffix) const { return arch_ + "." + std::string(suffix); }

    uint32_t u32(std::string_view suffix) const;  // required
    uint32_t u32(std::string_view suffix, uint32_t fallback) const;
    float f32(std::string_view suffix) const;  // required
    float f32(std::string_view suffix, float fallback) const;
    std::optional<float> optional_f32(std::string_view suffix) const;
    std::optional<std::string_view> string(std::string_view suffix) const;
    // A per-layer u32 key may be one value or an array of n_layer values; vkllm needs them equal.
    uint32_t uniform_u32(std::string_view suffix, uint32_t fallback, uint32_t n_layer) const;

private:
    const gguf::File& file_;
    std::string arch_;
};

// The generic hyperparameters every architecture reads.
struct BaseHparams {
    uint32_t n_ctx_train = 0;
    uint32_t n_embd = 0;
    uint32_t n_layer = 0;
    uint32_t n_head = 0;
    uint32_t n_head_kv = 0;
    uint32_t head_dim_k = 0;  // attention.key_length, default n_embd / n_head
    uint32_t head_dim_v = 0;
    uint32_t n_rot = 0;       // rope.dimension_count, default head_dim_k
    uint32_t n_ff = 0;
    uint32_t n_vocab = 0;
    float rms_eps = 0;        // the norms' epsilon: attention.layer_norm_rms_epsilon, or the key read_base_hparams is given
};

// eps_key: the epsilon's key, a LayerNorm model's (BERT: attention.layer_norm_epsilon) in place of the RMSNorm one.
BaseHparams read_base_hparams(const ArchKeys& keys, std::string_view eps_key = "attention.layer_norm_rms_epsilon");

// RoPE for a layer using the file's rope.* keys (B.4): freq_base, linear or YaRN scaling, and the
// attention factor llama.cpp's context derives. `read_yarn_betas`: only mistral3 reads them.
ops::RopeConfig read_rope(const ArchKeys& keys, uint32_t n_rot, ops::RopeMode mode, bool read_yarn_betas);

}  // namespace vkllm::model
