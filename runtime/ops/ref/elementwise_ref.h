#pragma once
// Reference elementwise ops: add (with a repeating second operand), scale, and the GLU activations
// (model-notes.md C.0 FFN).
#include <span>

namespace vkllm::ref {

// y[i] = a[i] + b[i % b.size()]: a bias or a residual (b.size() == a.size()).
void add(std::span<const float> a, std::span<const float> b, std::span<float> y);
void scale(std::span<const float> x, float factor, std::span<float> y);
// y = cap * tanh(x / cap).
void softcap(std::span<const float> x, float cap, std::span<float> y);

// y = silu(gate) * up, silu(z) = z / (1 + e^-z).
void swiglu(std::span<const float> gate, std::span<const float> up, std::span<float> y);
// y = gelu_tanh(gate) * up, gelu_tanh(z) = 0.5 z (1 + tanh(sqrt(2/pi) (z + 0.044715 z^3))).
void geglu(std::span<const float> gate, std::span<const float> up, std::span<float> y);
// y = g / (1 + e^(-1.702 g)) * (clamp(up, -7, 7) + 1) with g = min(gate, 7) (MiniMax-M3's SwiGLU).
void swiglu_oai(std::span<const float> gate, std::span<const float> up, std::span<float> y);

}  // namespace vkllm::ref
