#pragma once
// GELU, tanh approximation (ggml_gelu; shaders/gelu.comp): the activation of SigLIP's MLP and of
// the Pixtral projector (model-notes.md D.2, D.3).
#include <cstdint>

#include "graph/graph.h"

namespace vkllm::ops {

// y[i] = gelu_tanh(x[i]) for i < n; y may be x.
graph::Dispatch gelu(gpu::Device& device, const graph::Region& x, const graph::Region& y, uint32_t n);

}  // namespace vkllm::ops
