#pragma once
// Products with the experts the router selected (the matvec and matmul kernels built with
// EXPERT_IDS; pipelines matvec_id_<type>, matmul_id_<type>): only the selected experts' rows are read.
// A stacked expert tensor is a WeightMatrix of n_expert * expert_rows rows, split into segments at
// row boundaries like any weight (an expert may straddle two segments); each segment is a dispatch
// whose workgroups skip rows outside it.
#include <cstdint>
#include <optional>
#include <vector>

#include "ops/matmul.h"
#include "ops/elementwise.h"
#include "ops/matvec.h"

namespace vkllm::ops {

// Which rows of each expert a product takes: rows row_begin .. row_begin + rows - 1 of each
// expert_rows-row matrix (a fused gate_up tensor gives the gate and the up half in two products).
struct ExpertRows {
    uint32_t n_expert = 0;
    uint32_t expert_rows = 0;
    uint32_t row_begin = 0;
    uint32_t rows = 0;
};

// matvec_id's input: one x [cols] for all slots, or one per slot [n_slots][cols]; with a GLU, each
// slot's x is [gate | up] of 2 * cols floats and the kernel forms act(gate) * up (the activation
// fused into the down projection).
struct ExpertInput {
    graph::Region x;
    bool per_slot = false;
    std::optional<Glu> glu;
};
// matvec_id's output: slot s's rows at y[s * stride + offset ..] (stride 0: the selected rows), so
// separate gate and up products can fill the halves of one [gate | up] row per slot.
struct ExpertOutput {
    graph::Region y;
    uint32_t stride = 0, offset = 0;
};

// One token: y[s] = W_{ids[s]} in[s] for the n_slots slots; ids uint32 [n_slots].
std::vector<graph::Dispatch> matvec_id(gpu::Device& device, const WeightMatrix& experts, const ExpertRows& select,
                                       const ExpertInput& input, const graph::Region& ids, const ExpertOutput& output,
                                       uint32_t n_slots, std::optional<MatvecConfig> config = std::nullopt);

// matmul_id's launch on this device: matmul_config's tile (the int8 kernel's with int8_activations),
// its tokens cut to what an expert gets on average, so that a chunk spread over many experts does
// not multiply mostly empty token rows.
MatmulConfig matmul_id_config(const gpu::Capabilities& caps, gguf::GgmlType type, const ExpertRows& select,
                              uint32_t n_tokens, uint32_t n_slots, bool int8_activations = false);

// A chunk grouped by expert (ops::moe_group): for each expert e and each of its count[e] entries
// (entry = token * n_slots + slot), y[entry] = W_e x[x_per_slot ? entry : token]; y f32
// [n_tokens * n_slots][rows]. Workgroups past an expert's count exit at once. A config (tests,
// benchmarks, int8 activations) replaces matmul_id_config's; with int8_activations, x is
// quantize_q8's blocks of those rows (Q4_0 and Q8_0 stacks, ops/matmul.h).
std::vector<graph::Dispatch> matmul_id(gpu::Device& device, const WeightMatrix& experts, const ExpertRows& select,
                                       const graph::Region& x, bool x_per_slot, const graph::Region& counts,
                                       const graph::Region& entries, const graph::Region& y, uint32_t n_tokens,
                                       uint32_t n_slots, std::optional<MatmulConfig> config = std::nullopt);

}  // namespace vkllm::ops
