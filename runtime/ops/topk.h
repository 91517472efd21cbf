#pragma once
// Top-k and argmax (k = 1) of each row (shaders/topk.comp): the k largest values with their indices,
// largest first, ties to the lower index, NaN never chosen. Vocabulary-sized rows take two passes:
// chunks of a row in parallel, then a merge of the chunks' candidates.
#include <cstdint>
#include <vector>

#include "graph/graph.h"

namespace vkllm::ops {

constexpr uint32_t max_top_k = 128;

struct TopKShape {
    uint32_t n = 0, n_rows = 0, k = 0;
    uint32_t chunks() const;           // workgroups per row in the first pass
    uint64_t scratch_bytes() const;    // candidates between the passes; 0 when one pass does
};

// x: f32 [n_rows][n]; values: f32 [n_rows][k]; indices: uint32 [n_rows][k]; scratch: scratch_bytes().
std::vector<graph::Dispatch> top_k(gpu::Device& device, const TopKShape& shape, const graph::Region& x,
                                   const graph::Region& values, const graph::Region& indices,
                                   const graph::Region& scratch);

}  // namespace vkllm::ops
