#include "ops/ref/softmax_ref.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace vkllm::ref {

void softmax(std::span<const float> x, uint32_t n, float scale, std::span<float> y) {
    for (size_t row = 0; row < x.size() / n; ++row) {
        const float* in = &x[row * n];
        double max = -INFINITY;
        for (uint32_t i = 0; i < n; ++i) max = std::max(max, double(in[i]) * scale);
        double sum = 0.0;
        for (uint32_t i = 0; i < n; ++i) sum += std::exp(double(in[i]) * scale - max);
        for (uint32_t i = 0; i < n; ++i) y[row * n + i] = float(std::exp(double(in[i]) * scale - max) / sum);
    }
}

std::vector<uint32_t> argmax(std::span<const float> x, uint32_t n) {
    std::vector<uint32_t> result;
    for (size_t row = 0; row < x.size() / n; ++row) {
        auto first = x.begin() + row * n;
        result.push_back(uint32_t(std::max_element(first, first + n) - first));  // first of equals
    }
    return result;
}

TopK top_k(std::span<const float> x, uint32_t n, uint32_t k) {
    TopK result;
    std::vector<uint32_t> order(n);
    for (size_t row = 0; row < x.size() / n; ++row) {
        const float* in = &x[row * n];
        std::iota(order.begin(), order.end(), 0u);
        std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](uint32_t a, uint32_t b) {
            return in[a] > in[b] || (in[a] == in[b] && a < b);
        });
        for (uint32_t i = 0; i < k; ++i) {
            result.indices.push_back(order[i]);
            result.values.push_back(in[order[i]]);
        }
    }
    return result;
}

}  // namespace vkllm::ref
