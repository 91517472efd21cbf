#pragma once
// GELU, tanh approximation (ggml_gelu; shaders/gelu.comp): the activation of SigLIP's MLP and of
// the Pixtral projector (model-notes.md D.2, D.3).
#include <cstdint>

#include "gpu/dispatch.h"

namespace vkllm::ops {

// y[i] = gelu_tanh(x[i]) for i < n; y may be x.
gpu::Dispatch gelu(gpu::Device& device, const gpu::BufferRange& x, const gpu::BufferRange& y, uint32_t n);

}  // namespace vkllm::ops
