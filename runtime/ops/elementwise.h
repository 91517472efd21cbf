#pragma once
// Elementwise ops over f32 buffers (shaders/elementwise.comp): residual and bias adds, scaling, and
// the gated activations of GLU feed-forward blocks (model-notes.md C.0). Outputs may alias inputs.
#include <cstdint>

#include "graph/graph.h"

namespace vkllm::ops {

// y[i] = a[i] + b[i % b_n] for i < n: b_n = n for a residual, the row length for a bias.
graph::Dispatch add(gpu::Device& device, const graph::Region& a, const graph::Region& b, const graph::Region& y,
                    uint32_t n, uint32_t b_n);
graph::Dispatch scale(gpu::Device& device, const graph::Region& x, const graph::Region& y, uint32_t n, float factor);
// y = cap * tanh(x / cap): Gemma's final logit softcapping.
graph::Dispatch softcap(gpu::Device& device, const graph::Region& x, const graph::Region& y, uint32_t n, float cap);

// silu(gate) * up, gelu_tanh(gate) * up, and MiniMax-M3's clamped SwiGLU (model-notes.md C.0)
enum class Glu { SwiGlu, GeGlu, SwiGluOai };
graph::Dispatch glu(gpu::Device& device, Glu kind, const graph::Region& gate, const graph::Region& up,
                    const graph::Region& y, uint32_t n);

}  // namespace vkllm::ops
