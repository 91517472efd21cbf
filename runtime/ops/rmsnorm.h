#pragma once
// RMSNorm of each row, optionally times a weight (model-notes.md C.0; shaders/rmsnorm.comp).
// Per-head norms (Q/K norms) are the same op with rows of head_dim, one per (token, head).
#include <cstdint>
#include <optional>

#include "gpu/capabilities.h"
#include "graph/graph.h"

namespace vkllm::ops {

// x, y: f32 [n_rows][n] (y may be x); weight: f32 [n], or none.
graph::Dispatch rmsnorm(gpu::Device& device, const graph::Region& x, std::optional<graph::Region> weight,
                        const graph::Region& y, uint32_t n, uint32_t n_rows, float eps);

// The same over n_rows rows of n in groups of rows_per_group consecutive rows, the groups group_stride
// floats apart: per-head norms of q or k in place in each token's fused QKV row.
graph::Dispatch rmsnorm_grouped(gpu::Device& device, const graph::Region& x, std::optional<graph::Region> weight,
                                const graph::Region& y, uint32_t n, uint32_t n_rows, float eps, uint32_t rows_per_group,
                                uint32_t group_stride);

// y += rmsnorm(x) * weight over n_rows rows of n (y is not x): a post-norm with its residual add.
graph::Dispatch rmsnorm_add(gpu::Device& device, const graph::Region& x, const graph::Region& weight,
                            const graph::Region& y, uint32_t n, uint32_t n_rows, float eps);

// Per-head norms of q and k in place in each token's fused QKV row [q heads | k heads | ...] of
// qkv_stride floats, in one pass: the n_head q heads with q_weight, the n_head_kv k heads with k_weight.
graph::Dispatch rmsnorm_qk_heads(gpu::Device& device, const graph::Region& qkv, const graph::Region& q_weight,
                                 const graph::Region& k_weight, uint32_t head_dim, uint32_t n_head, uint32_t n_head_kv,
                                 uint32_t n_tokens, uint32_t qkv_stride, float eps);

// Invocations for one workgroup per row of n floats: enough for a vec4 each up to 256, at least 64
// so that whole subgroups of every device fill it; no more than the device allows.
uint32_t row_workgroup_size(const gpu::Capabilities& caps, uint32_t n);

}  // namespace vkllm::ops
