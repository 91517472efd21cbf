#pragma once
// Softmax of each row of x * scale (shaders/softmax.comp): MoE gating and sampling probabilities.
#include <cstdint>

#include "graph/graph.h"

namespace vkllm::ops {

// x, y: f32 [n_rows][n]; y may be x.
graph::Dispatch softmax(gpu::Device& device, const graph::Region& x, const graph::Region& y, uint32_t n,
                        uint32_t n_rows, float scale = 1.0f);

}  // namespace vkllm::ops
