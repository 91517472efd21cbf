#include "ops/rope_config.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace vkllm::ops {

// ggml_rope_yarn_corr_dim: the pair index whose wavelength fits n_rot times into n_ctx_orig. Kept in
// f32 like ggml, because floor/ceil of it pick integers that decide which pairs are interpolated.
static float corr_dim(const RopeConfig& config, float n_rot) {
    return float(config.n_dims) *
           std::log(float(config.n_ctx_orig) / (n_rot * 2.0f * std::numbers::pi_v<float>)) /
           (2.0f * std::log(config.freq_base));
}

RopeCorrDims rope_corr_dims(const RopeConfig& config) {
    float lo = std::floor(corr_dim(config, config.beta_fast));
    float hi = std::ceil(corr_dim(config, config.beta_slow));
    return {std::max(0.0f, lo), std::min(float(config.n_dims) - 1.0f, hi)};
}

}  // namespace vkllm::ops
