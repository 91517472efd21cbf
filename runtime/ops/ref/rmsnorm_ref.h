#pragma once
// Reference RMSNorm (model-notes.md C.0, ggml_rms_norm then * w).
#include <cstdint>
#include <span>

namespace vkllm::ref {

// Each row of n values: y = x / sqrt(mean(x^2) + eps) [* weight]. Per-head norms are the same call
// with n = head_dim and one row per (token, head). An empty weight skips the multiply.
void rmsnorm(std::span<const float> x, std::span<const float> weight, uint32_t n, float eps,
             std::span<float> y);

}  // namespace vkllm::ref
