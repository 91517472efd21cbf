#include "ops/ref/rope_ref.h"

#include <algorithm>
#include <cmath>

namespace vkllm::ref {

void rope(std::span<float> x, uint32_t head_dim, uint32_t n_head, std::span<const int32_t> positions,
          const ops::RopeConfig& config) {
    const uint32_t half = config.n_dims / 2;
    const ops::RopeCorrDims corr = ops::rope_corr_dims(config);
    for (size_t t = 0; t < positions.size(); ++t) {
        for (uint32_t h = 0; h < n_head; ++h) {
            float* v = &x[(t * n_head + h) * head_dim];
            for (uint32_t i = 0; i < half; ++i) {
                double theta_extrap = positions[t] * std::pow(double(config.freq_base), -2.0 * i / config.n_dims);
                if (!config.freq_factors.empty()) theta_extrap /= config.freq_factors[i];
                double theta_interp = config.freq_scale * theta_extrap;
                double theta = theta_interp, mscale = config.attn_factor;
                if (config.ext_factor != 0.0f) {
                    double y = (i - corr.lo) / std::max(0.001, double(corr.hi) - corr.lo);
                    double mix = (1.0 - std::clamp(y, 0.0, 1.0)) * config.ext_factor;
                    theta = theta_interp * (1.0 - mix) + theta_extrap * mix;
                    mscale *= 1.0 + 0.1 * std::log(1.0 / config.freq_scale);
                }
                double c = std::cos(theta) * mscale, s = std::sin(theta) * mscale;
                uint32_t i0 = config.mode == ops::RopeMode::Neox ? i : 2 * i;
                uint32_t i1 = config.mode == ops::RopeMode::Neox ? i + half : 2 * i + 1;
                double a = v[i0], b = v[i1];
                v[i0] = float(a * c - b * s);
                v[i1] = float(a * s + b * c);
            }
        }
    }
}

void attn_temp_scale(std::span<float> x, uint32_t row, std::span<const int32_t> positions,
                     float beta, uint32_t floor_length) {
    for (size_t t = 0; t < positions.size(); ++t) {
        double scale = 1.0 + beta * std::log(std::floor(double(positions[t]) / floor_length) + 1.0);
        for (uint32_t i = 0; i < row; ++i) x[t * row + i] = float(x[t * row + i] * scale);
    }
}

}  // namespace vkllm::ref
