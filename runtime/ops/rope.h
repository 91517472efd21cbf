#pragma once
// RoPE (model-notes.md B; shaders/rope.comp) and the Llama-4 attention temperature (B.5;
// shaders/attn_temp.comp), both in place and driven by an int32 positions buffer (positions >= 0).
#include <cstdint>
#include <vector>

#include "graph/graph.h"
#include "ops/rope_config.h"

namespace vkllm::ops {

// The per-pair table the kernel reads, built once per layer configuration: pair i's angular speed
// (YaRN mix, freq_scale and freq_factors folded in) as frac(freq_i / 2pi) * 2^64, in (low, high)
// 32-bit words. Fixed-point turns keep pos * freq exact modulo one turn at any position.
std::vector<uint32_t> rope_phase_table(const RopeConfig& config);
// The cos/sin multiplier: attn_factor, times YaRN's 1 + 0.1 ln(1 / freq_scale) when ext_factor != 0.
float rope_mscale(const RopeConfig& config);

struct RopeShape {
    uint32_t n_tokens = 0, n_head = 0, head_dim = 0;
    uint32_t token_stride = 0;  // floats from one token's first head to the next (0: n_head * head_dim)
};

// x: f32 tokens of token_stride floats starting with n_head heads of head_dim; phases: the table
// above, uploaded; positions: int32 [n_tokens].
graph::Dispatch rope(gpu::Device& device, const RopeConfig& config, const RopeShape& shape, const graph::Region& phases,
                     const graph::Region& positions, const graph::Region& x);

// x [n_tokens][row] *= 1 + beta * ln(1 + floor(positions[t] / floor_length)).
graph::Dispatch attn_temp(gpu::Device& device, const graph::Region& positions, const graph::Region& x,
                          uint32_t n_tokens, uint32_t row, float beta, uint32_t floor_length);

}  // namespace vkllm::ops
