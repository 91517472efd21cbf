#pragma once
// Softmax of each row of x * scale (shaders/softmax.comp): MoE gating and sampling probabilities.
#include <cstdint>

#include "gpu/dispatch.h"

namespace vkllm::ops {

// x, y: f32 [n_rows][n]; y may be x.
gpu::Dispatch softmax(gpu::Device& device, const gpu::BufferRange& x, const gpu::BufferRange& y, uint32_t n,
                      uint32_t n_rows, float scale = 1.0f);

}  // namespace vkllm::ops
