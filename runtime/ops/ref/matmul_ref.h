#pragma once
// Reference matrix products with GGUF weights (model-notes.md A.2): each weight row is dequantized
// with gguf::dequantize, then dotted with the input in double precision.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "gguf/types.h"

namespace vkllm::ref {

// y[t][r] = sum_k W[r][k] * x[t][k] for t < n_tokens (x is [n_tokens][cols], y [n_tokens][rows]);
// W is `rows` rows of `cols` elements in the blocks of `type`. With accumulate, adds into y instead.
void matmul(gguf::GgmlType type, std::span<const std::byte> weights, uint32_t rows, uint32_t cols,
            std::span<const float> x, uint32_t n_tokens, std::span<float> y, bool accumulate = false);

// x [n][cols] (cols a multiple of 32) as shaders/quantize_q8.comp writes it: per 32 values the scale
// (the fp16 nearest max |x| / 127, as f32 bits), then round(x * 127 / max |x|) (halves away from zero)
// as 8 words of 4 int8.
std::vector<uint32_t> quantize_q8(std::span<const float> x, uint32_t cols);
// The values quantize_q8's blocks stand for: q * d.
std::vector<float> dequantize_q8(std::span<const uint32_t> blocks);

}  // namespace vkllm::ref
