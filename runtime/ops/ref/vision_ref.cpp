#include "ops/ref/vision_ref.h"

#include <cmath>
#include <numbers>

namespace vkllm::ref {

void layernorm(std::span<const float> x, std::span<const float> weight, std::span<const float> bias, uint32_t n,
               float eps, std::span<float> y) {
    for (size_t row = 0; row < x.size() / n; ++row) {
        const float* in = &x[row * n];
        double mean = 0, var = 0;
        for (uint32_t i = 0; i < n; ++i) mean += in[i];
        mean /= n;
        for (uint32_t i = 0; i < n; ++i) var += (in[i] - mean) * (in[i] - mean);
        const double inv_std = 1.0 / std::sqrt(var / n + eps);
        for (uint32_t i = 0; i < n; ++i) y[row * n + i] = float((in[i] - mean) * inv_std * weight[i] + bias[i]);
    }
}

void gelu(std::span<const float> x, std::span<float> y) {
    const double sqrt_2_over_pi = std::sqrt(2.0 / std::numbers::pi);
    for (size_t i = 0; i < x.size(); ++i) {
        const double z = x[i];
        y[i] = float(0.5 * z * (1.0 + std::tanh(sqrt_2_over_pi * (z + 0.044715 * z * z * z))));
    }
}

std::vector<float> avg_pool_2d(std::span<const float> in, uint32_t n_embd, uint32_t nx, uint32_t ny, uint32_t k) {
    std::vector<float> out(uint64_t(nx / k) * (ny / k) * n_embd);
    for (uint32_t oy = 0; oy < ny / k; ++oy)
        for (uint32_t ox = 0; ox < nx / k; ++ox)
            for (uint32_t c = 0; c < n_embd; ++c) {
                double sum = 0;
                for (uint32_t ky = 0; ky < k; ++ky)
                    for (uint32_t kx = 0; kx < k; ++kx) sum += in[(uint64_t(oy * k + ky) * nx + ox * k + kx) * n_embd + c];
                out[(uint64_t(oy) * (nx / k) + ox) * n_embd + c] = float(sum / (k * k));
            }
    return out;
}

std::vector<float> patch_merge(std::span<const float> in, uint32_t n_embd, uint32_t nx, uint32_t ny, uint32_t k) {
    std::vector<float> out(in.size());
    const uint64_t width = uint64_t(n_embd) * k * k;
    for (uint32_t oy = 0; oy < ny / k; ++oy)
        for (uint32_t ox = 0; ox < nx / k; ++ox)
            for (uint32_t c = 0; c < n_embd; ++c)
                for (uint32_t ky = 0; ky < k; ++ky)
                    for (uint32_t kx = 0; kx < k; ++kx)
                        out[(uint64_t(oy) * (nx / k) + ox) * width + (c * k + ky) * k + kx] =
                            in[(uint64_t(oy * k + ky) * nx + ox * k + kx) * n_embd + c];
    return out;
}

std::vector<float> row_breaks(std::span<const float> in, std::span<const float> row_break, uint32_t n_embd,
                              uint32_t nx, uint32_t ny) {
    std::vector<float> out;
    for (uint32_t y = 0; y < ny; ++y) {
        if (y > 0) out.insert(out.end(), row_break.begin(), row_break.begin() + n_embd);
        out.insert(out.end(), in.begin() + int64_t(y) * nx * n_embd, in.begin() + int64_t(y + 1) * nx * n_embd);
    }
    return out;
}

}  // namespace vkllm::ref
