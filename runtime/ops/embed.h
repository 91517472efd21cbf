#pragma once
// Embedding lookup (get_rows): out[t] = row ids[t] of a weight of any type vkllm runs, dequantized to
// f32 (shaders/get_rows.comp). Ids outside the weight give a zero row, never a stray read.
#include <cstdint>
#include <vector>

#include "graph/graph.h"
#include "ops/matvec.h"

namespace vkllm::ops {

// ids: int32 [n_tokens]; out: f32 [n_tokens][weights.cols]. One dispatch per weight segment.
std::vector<graph::Dispatch> get_rows(gpu::Device& device, const WeightMatrix& weights, const graph::Region& ids,
                                      const graph::Region& out, uint32_t n_tokens);

}  // namespace vkllm::ops
