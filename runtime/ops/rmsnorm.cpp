#include "ops/rmsnorm.h"

#include <algorithm>
#include <bit>

#include "core/error.h"
#include "gpu/device.h"
#include "ops/matvec.h"
#include "params.h"

namespace vkllm::ops {

uint32_t row_workgroup_size(uint32_t n) { return std::clamp(std::bit_ceil((n + 3) / 4), 64u, 256u); }

gpu::Dispatch rmsnorm(gpu::Device& device, const gpu::BufferRange& x, std::optional<gpu::BufferRange> weight,
                      const gpu::BufferRange& y, uint32_t n, uint32_t n_rows, float eps) {
    return rmsnorm_grouped(device, x, weight, y, n, n_rows, eps, n_rows, n_rows * n);
}

gpu::Dispatch rmsnorm_grouped(gpu::Device& device, const gpu::BufferRange& x, std::optional<gpu::BufferRange> weight,
                              const gpu::BufferRange& y, uint32_t n, uint32_t n_rows, float eps,
                              uint32_t rows_per_group, uint32_t group_stride) {
    if (n_rows == 0 || rows_per_group == 0 || group_stride < uint64_t(rows_per_group) * n)
        fail("rmsnorm: groups of {} rows of {} cannot lie {} floats apart", rows_per_group, n, group_stride);
    const uint64_t last = n_rows - 1;
    const uint64_t bytes = (last / rows_per_group * group_stride + last % rows_per_group * n + n) * 4;
    if (n == 0 || x.size < bytes || y.size < bytes || (weight && weight->size < uint64_t(n) * 4))
        fail("rmsnorm: {} rows of {} need x and y of {} bytes and a weight of {}, got {}, {} and {}", n_rows, n, bytes,
             n * 4, x.size, y.size, weight ? weight->size : 0);
    gpu::Dispatch dispatch;
    dispatch.pipeline = &device.pipelines().get(weight ? "rmsnorm_mul" : "rmsnorm", {{0, row_workgroup_size(n)}});
    if (weight) dispatch.bindings.push_back({*weight, gpu::Access::Read});
    dispatch.bindings.push_back({x, gpu::Access::Read});
    dispatch.bindings.push_back({y, gpu::Access::Write});
    dispatch.params(params::RmsNormParams{.n = n, .n_rows = n_rows, .eps = eps, .rows_per_group = rows_per_group,
                                          .group_stride = group_stride});
    dispatch.groups = group_grid(n_rows, device.caps());
    return dispatch;
}

}  // namespace vkllm::ops
