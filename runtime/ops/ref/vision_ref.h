#pragma once
// References for the vision encoders' ops (model-notes.md D): LayerNorm, GELU, and the patch-grid
// regroupings (average pool, patch merger, row breaks). Grids are row-major over nx x ny patches.
#include <cstdint>
#include <span>
#include <vector>

namespace vkllm::ref {

// Each row of n: y = (x - mean) / sqrt(var + eps) * weight + bias.
void layernorm(std::span<const float> x, std::span<const float> weight, std::span<const float> bias, uint32_t n,
               float eps, std::span<float> y);
// y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
void gelu(std::span<const float> x, std::span<float> y);

std::vector<float> avg_pool_2d(std::span<const float> in, uint32_t n_embd, uint32_t nx, uint32_t ny, uint32_t k);
std::vector<float> patch_merge(std::span<const float> in, uint32_t n_embd, uint32_t nx, uint32_t ny, uint32_t k);
std::vector<float> row_breaks(std::span<const float> in, std::span<const float> row_break, uint32_t n_embd,
                              uint32_t nx, uint32_t ny);

}  // namespace vkllm::ref
