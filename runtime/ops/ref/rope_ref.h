#pragma once
// Reference RoPE and attention temperature scaling (model-notes.md B.2, B.3, B.5), in double.
#include <cstdint>
#include <span>

#include "ops/rope_config.h"

namespace vkllm::ref {

// Rotates x [n_tokens][n_head][head_dim] in place; token t sits at positions[t].
void rope(std::span<float> x, uint32_t head_dim, uint32_t n_head, std::span<const int32_t> positions,
          const ops::RopeConfig& config);

// x [n_tokens][row] *= 1 + beta * ln(1 + floor(positions[t] / floor_length)) (Llama-4 temperature).
void attn_temp_scale(std::span<float> x, uint32_t row, std::span<const int32_t> positions,
                     float beta, uint32_t floor_length);

}  // namespace vkllm::ref
