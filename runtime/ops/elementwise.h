#pragma once
// Elementwise ops over f32 buffers (shaders/elementwise.comp): residual and bias adds, scaling, and
// the gated activations of GLU feed-forward blocks (model-notes.md C.0). Outputs may alias inputs.
#include <cstdint>

#include "gpu/dispatch.h"

namespace vkllm::ops {

// y[i] = a[i] + b[i % b_n] for i < n: b_n = n for a residual, the row length for a bias.
gpu::Dispatch add(gpu::Device& device, const gpu::BufferRange& a, const gpu::BufferRange& b,
                  const gpu::BufferRange& y, uint32_t n, uint32_t b_n);
gpu::Dispatch scale(gpu::Device& device, const gpu::BufferRange& x, const gpu::BufferRange& y, uint32_t n,
                    float factor);
// y = cap * tanh(x / cap): Gemma's final logit softcapping.
gpu::Dispatch softcap(gpu::Device& device, const gpu::BufferRange& x, const gpu::BufferRange& y, uint32_t n,
                      float cap);

// silu(gate) * up, gelu_tanh(gate) * up, and MiniMax-M3's clamped SwiGLU (model-notes.md C.0)
enum class Glu { SwiGlu, GeGlu, SwiGluOai };
gpu::Dispatch glu(gpu::Device& device, Glu kind, const gpu::BufferRange& gate, const gpu::BufferRange& up,
                  const gpu::BufferRange& y, uint32_t n);

}  // namespace vkllm::ops
