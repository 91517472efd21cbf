#pragma once
// Reference per-head products (ops/matvec_heads.h): each head's matrix through ref::matmul.
#include <cstddef>
#include <cstdint>
#include <span>

#include "gguf/types.h"
#include "ops/matvec_heads.h"

namespace vkllm::ref {

// y[t][h][r] = sum_c W[h][r][c] * x[t][h][c]; W holds n_head * rows rows of cols values in `type`'s
// blocks; x and y addressed as their layouts say (elements of y outside the layout are kept).
void matvec_heads(gguf::GgmlType type, std::span<const std::byte> weights, uint32_t rows, uint32_t cols,
                  uint32_t n_head, uint32_t n_tokens, std::span<const float> x, ops::HeadLayout x_layout,
                  std::span<float> y, ops::HeadLayout y_layout);

}  // namespace vkllm::ref
