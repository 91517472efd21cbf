#include "ops/ref/rmsnorm_ref.h"

#include <cmath>

namespace vkllm::ref {

void rmsnorm(std::span<const float> x, std::span<const float> weight, uint32_t n, float eps,
             std::span<float> y) {
    for (size_t row = 0; row < x.size() / n; ++row) {
        const float* in = &x[row * n];
        double sum_squares = 0.0;  // ggml accumulates in double too
        for (uint32_t i = 0; i < n; ++i) sum_squares += double(in[i]) * in[i];
        double inv_rms = 1.0 / std::sqrt(sum_squares / n + eps);
        for (uint32_t i = 0; i < n; ++i)
            y[row * n + i] = float(in[i] * inv_rms * (weight.empty() ? 1.0 : weight[i]));
    }
}

}  // namespace vkllm::ref
