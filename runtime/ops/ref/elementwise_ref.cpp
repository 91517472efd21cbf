#include "ops/ref/elementwise_ref.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace vkllm::ref {

void add(std::span<const float> a, std::span<const float> b, std::span<float> y) {
    for (size_t i = 0; i < a.size(); ++i) y[i] = a[i] + b[i % b.size()];
}

void scale(std::span<const float> x, float factor, std::span<float> y) {
    for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * factor;
}

void softcap(std::span<const float> x, float cap, std::span<float> y) {
    for (size_t i = 0; i < x.size(); ++i) y[i] = float(cap * std::tanh(double(x[i]) / cap));
}

void swiglu(std::span<const float> gate, std::span<const float> up, std::span<float> y) {
    for (size_t i = 0; i < gate.size(); ++i) {
        double z = gate[i];
        y[i] = float(z / (1.0 + std::exp(-z)) * up[i]);
    }
}

void geglu(std::span<const float> gate, std::span<const float> up, std::span<float> y) {
    const double sqrt_2_over_pi = std::sqrt(2.0 / std::numbers::pi);
    for (size_t i = 0; i < gate.size(); ++i) {
        double z = gate[i];
        y[i] = float(0.5 * z * (1.0 + std::tanh(sqrt_2_over_pi * (z + 0.044715 * z * z * z))) * up[i]);
    }
}

void swiglu_oai(std::span<const float> gate, std::span<const float> up, std::span<float> y) {
    const double alpha = 1.702, limit = 7.0;
    for (size_t i = 0; i < gate.size(); ++i) {
        const double g = std::min(double(gate[i]), limit), u = std::clamp(double(up[i]), -limit, limit);
        y[i] = float(g / (1.0 + std::exp(-alpha * g)) * (u + 1.0));
    }
}

}  // namespace vkllm::ref
