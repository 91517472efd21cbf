#include "ops/rmsnorm.h"

#include <algorithm>
#include <bit>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "gpu/device.h"
#include "ops/matvec.h"
#include "ops/workgroup.h"
#include "params.h"

namespace vkllm::ops {

uint32_t row_workgroup_size(const gpu::Capabilities& caps, uint32_t n) {
    return flat_workgroup_size(caps, std::clamp(std::bit_ceil((n + 3) / 4), 64u, 256u));
}

graph::Dispatch rmsnorm(gpu::Device& device, const graph::Region& x, std::optional<graph::Region> weight,
                        const graph::Region& y, uint32_t n, uint32_t n_rows, float eps) {
    return rmsnorm_grouped(device, x, weight, y, n, n_rows, eps, n_rows, n_rows * n);
}

namespace {

// The one rmsnorm.comp dispatch behind every op here: `weights` bound first (none, one, or the first
// and the rest of each group's rows), then x and y.
graph::Dispatch norm_rows(gpu::Device& device, std::string_view pipeline, std::vector<graph::Region> weights,
                          const graph::Region& x, const graph::Region& y, bool accumulate,
                          const params::RmsNormParams& params) {
    const uint32_t n = params.n, n_rows = params.n_rows, rows_per_group = params.rows_per_group;
    if (n_rows == 0 || rows_per_group == 0 || params.group_stride < uint64_t(rows_per_group) * n)
        fail("rmsnorm: groups of {} rows of {} cannot lie {} floats apart", rows_per_group, n, params.group_stride);
    const uint64_t last = n_rows - 1;
    const uint64_t bytes = (last / rows_per_group * params.group_stride + last % rows_per_group * n + n) * 4;
    const bool weights_fit = std::all_of(weights.begin(), weights.end(), [&](const auto& w) { return w.size >= n * 4ull; });
    if (n == 0 || x.size < bytes || y.size < bytes || !weights_fit)
        fail("rmsnorm: {} rows of {} need x and y of {} bytes and weights of {}, got {} and {}", n_rows, n, bytes,
             n * 4, x.size, y.size);
    graph::Dispatch dispatch;
    dispatch.pipeline = &device.pipelines().get(pipeline, {{0, row_workgroup_size(device.caps(), n)}});
    for (const graph::Region& weight : weights) dispatch.bindings.push_back({weight, gpu::Access::Read});
    dispatch.bindings.push_back({x, gpu::Access::Read});
    dispatch.bindings.push_back({y, accumulate ? gpu::Access::ReadWrite : gpu::Access::Write});
    dispatch.params(params);
    dispatch.groups = group_grid(n_rows, device.caps());
    return dispatch;
}

}  // namespace

graph::Dispatch rmsnorm_grouped(gpu::Device& device, const graph::Region& x, std::optional<graph::Region> weight,
                                const graph::Region& y, uint32_t n, uint32_t n_rows, float eps, uint32_t rows_per_group,
                                uint32_t group_stride) {
    std::vector<graph::Region> weights;
    if (weight) weights.push_back(*weight);
    return norm_rows(device, weight ? "rmsnorm_mul" : "rmsnorm", weights, x, y, false,
                     {.n = n, .n_rows = n_rows, .eps = eps, .rows_per_group = rows_per_group, .group_stride = group_stride});
}

graph::Dispatch rmsnorm_add(gpu::Device& device, const graph::Region& x, const graph::Region& weight,
                            const graph::Region& y, uint32_t n, uint32_t n_rows, float eps) {
    if (x.overlaps(y)) fail("rmsnorm_add: x and y overlap");
    return norm_rows(device, "rmsnorm_mul_add", {weight}, x, y, true,
                     {.n = n, .n_rows = n_rows, .eps = eps, .rows_per_group = n_rows, .group_stride = n_rows * n});
}

graph::Dispatch rmsnorm_qk_heads(gpu::Device& device, const graph::Region& qkv, const graph::Region& q_weight,
                                 const graph::Region& k_weight, uint32_t head_dim, uint32_t n_head, uint32_t n_head_kv,
                                 uint32_t n_tokens, uint32_t qkv_stride, float eps) {
    const uint32_t heads = n_head + n_head_kv;
    return norm_rows(device, "rmsnorm_mul2", {q_weight, k_weight}, qkv, qkv, false,
                     {.n = head_dim, .n_rows = n_tokens * heads, .eps = eps, .rows_per_group = heads,
                      .group_stride = qkv_stride, .first_weight_rows = n_head});
}

}  // namespace vkllm::ops
