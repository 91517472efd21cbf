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

// One token: y[s] = W_{ids[s]} x[s] for the n_slots slots; ids uint32 [n_slots]; x f32 [n_slots][cols]
// with x_per_slot, else one x [cols] for all; y f32 [n_slots][rows].
std::vector<gpu::Dispatch> matvec_id(gpu::Device& device, const WeightMatrix& experts, const ExpertRows& select,
                                     const gpu::BufferRange& x, bool x_per_slot, const gpu::BufferRange& ids,
                                     const gpu::BufferRange& y, uint32_t n_slots,
                                     std::optional<MatvecConfig> config = std::nullopt);

// A chunk grouped by expert (ops::moe_group): for each expert e and each of its count[e] entries
// (entry = token * n_slots + slot), y[entry] = W_e x[x_per_slot ? entry : token]; y f32
// [n_tokens * n_slots][rows]. Workgroups past an expert's count exit at once.
std::vector<gpu::Dispatch> matmul_id(gpu::Device& device, const WeightMatrix& experts, const ExpertRows& select,
                                     const gpu::BufferRange& x, bool x_per_slot, const gpu::BufferRange& counts,
                                     const gpu::BufferRange& entries, const gpu::BufferRange& y, uint32_t n_tokens,
                                     uint32_t n_slots, std::optional<MatmulConfig> config = std::nullopt);

}  // namespace vkllm::ops
