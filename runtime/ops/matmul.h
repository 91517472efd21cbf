#pragma once
// Matrix-matrix products for prefill: Y = W X, or Y += W X with the residual add fused in, for
// n_tokens token vectors at once (x [n_tokens][cols], y [n_tokens][rows], as ggml_mul_mat). W stays
// in its GGUF blocks (the types of matvec.h), decoded into shared-memory tiles by the kernel
// (shaders/matmul_<type>.comp).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ops/matvec.h"

namespace vkllm::ops {

// Tile of Y one workgroup computes; each invocation computes 4 x 4 of it, so the workgroup has
// (tile_rows / 4) * (tile_tokens / 4) invocations.
struct MatmulConfig {
    uint32_t tile_rows = 64;
    uint32_t tile_tokens = 64;
    bool float16 = false;  // fp16 tiles and products, f32 accumulation (where the type has a variant)
    bool texel_reads = false;  // weights through texel buffers (gpu::Capabilities::texel_reads)
};

MatmulConfig matmul_config(const gpu::Capabilities& caps, gguf::GgmlType type);
std::string matmul_pipeline_name(gguf::GgmlType type, const MatmulConfig& config);

// The dispatches computing y = W x (y += W x with accumulate) for n_tokens vectors: one per weight
// segment and per 24576 columns (longer rows are summed in pieces, in order, so they must run in
// order). A config (for tests and benchmarks) replaces the device's default.
std::vector<graph::Dispatch> matmul(gpu::Device& device, const WeightMatrix& weights, const graph::Region& x,
                                    const graph::Region& y, uint32_t n_tokens, bool accumulate,
                                    std::optional<MatmulConfig> config = std::nullopt);

}  // namespace vkllm::ops
