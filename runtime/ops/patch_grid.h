#pragma once
// Regroupings of a grid of patch vectors, tokens row-major over nx x ny, n_embd floats each
// (shaders/patch_grid.comp; model-notes.md D.2, D.3).
#include <cstdint>

#include "graph/graph.h"

namespace vkllm::ops {

struct PatchGrid {
    uint32_t n_embd = 0, nx = 0, ny = 0;
};

// Gemma 3's k x k average pool (ggml_pool_2d AVG, stride k): out [ny/k][nx/k][n_embd].
graph::Dispatch avg_pool_2d(gpu::Device& device, PatchGrid grid, uint32_t k, const graph::Region& in,
                            const graph::Region& out);
// Pixtral's patch merger gather: out [ny/k][nx/k][n_embd * k * k], element c*k*k + ky*k + kx of a
// merged token taken from patch (ox*k + kx, oy*k + ky) (torch unfold order).
graph::Dispatch patch_merge(gpu::Device& device, PatchGrid grid, uint32_t k, const graph::Region& in,
                            const graph::Region& out);
// The grid's rows with row_break [n_embd] between them: out [ny * (nx + 1) - 1][n_embd].
graph::Dispatch row_breaks(gpu::Device& device, PatchGrid grid, const graph::Region& in, const graph::Region& row_break,
                           const graph::Region& out);

}  // namespace vkllm::ops
