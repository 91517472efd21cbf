#pragma once
// Reference softmax and selection over rows (MoE gating, sampling).
#include <cstdint>
#include <span>
#include <vector>

namespace vkllm::ref {

// Each row of n values: y = softmax(x * scale), max subtracted first.
void softmax(std::span<const float> x, uint32_t n, float scale, std::span<float> y);

// Index of the largest value of each row of n; ties go to the lowest index.
std::vector<uint32_t> argmax(std::span<const float> x, uint32_t n);

// The k largest values of each row of n and their indices, largest first; ties by lowest index.
struct TopK {
    std::vector<uint32_t> indices;  // [rows][k]
    std::vector<float> values;      // [rows][k]
};
TopK top_k(std::span<const float> x, uint32_t n, uint32_t k);

}  // namespace vkllm::ref
