#pragma once
// RoPE parameters as llama.cpp passes them to ggml_rope_ext (model-notes.md B.1, B.4). GPU-free, so
// the reference and the host op share one definition.
#include <cstdint>
#include <vector>

namespace vkllm::ops {

enum class RopeMode : uint32_t {
    Normal = 0,  // adjacent pairs (x[2i], x[2i+1])
    Neox = 2,    // half split (x[i], x[i + n_dims/2])
};

struct RopeConfig {
    uint32_t n_dims = 0;  // rotated dims per head (rope.dimension_count); even; the rest pass through
    RopeMode mode = RopeMode::Normal;
    float freq_base = 10000.0f;
    float freq_scale = 1.0f;   // 1 / rope.scaling.factor
    float ext_factor = 0.0f;   // YaRN extrapolation mix; 0 turns YaRN off
    float attn_factor = 1.0f;  // multiplies cos and sin
    float beta_fast = 32.0f;
    float beta_slow = 1.0f;
    uint32_t n_ctx_orig = 0;          // rope.scaling.original_context_length; used when ext_factor != 0
    std::vector<float> freq_factors;  // rope_freqs.weight [n_dims/2] divisors, or empty
};

// The YaRN ramp bounds of ggml_rope_yarn_corr_dims (B.2), in pair-index units: {corr_lo, corr_hi}.
struct RopeCorrDims {
    float lo, hi;
};
RopeCorrDims rope_corr_dims(const RopeConfig& config);

}  // namespace vkllm::ops
