#pragma once
// LayerNorm of each row with weight and bias (ggml_norm, then * w + b; model-notes.md D.2;
// shaders/layernorm.comp): the SigLIP encoder's norms.
#include <cstdint>

#include "graph/graph.h"

namespace vkllm::ops {

// x, y: f32 [n_rows][n] (y may be x); weight, bias: f32 [n].
graph::Dispatch layernorm(gpu::Device& device, const graph::Region& x, const graph::Region& weight,
                          const graph::Region& bias, const graph::Region& y, uint32_t n, uint32_t n_rows, float eps);

}  // namespace vkllm::ops
