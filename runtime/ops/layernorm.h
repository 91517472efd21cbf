#pragma once
// LayerNorm of each row with weight and bias (ggml_norm, then * w + b; model-notes.md D.2;
// shaders/layernorm.comp): the SigLIP encoder's norms.
#include <cstdint>

#include "gpu/dispatch.h"

namespace vkllm::ops {

// x, y: f32 [n_rows][n] (y may be x); weight, bias: f32 [n].
gpu::Dispatch layernorm(gpu::Device& device, const gpu::BufferRange& x, const gpu::BufferRange& weight,
                        const gpu::BufferRange& bias, const gpu::BufferRange& y, uint32_t n, uint32_t n_rows, float eps);

}  // namespace vkllm::ops
