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
    const uint64_t bytes = uint64_t(n) * n_rows * 4;
    if (n == 0 || x.size < bytes || y.size < bytes || (weight && weight->size < uint64_t(n) * 4))
        fail("rmsnorm: {} rows of {} need x and y of {} bytes and a weight of {}, got {}, {} and {}", n_rows, n, bytes,
             n * 4, x.size, y.size, weight ? weight->size : 0);
    gpu::Dispatch dispatch;
    dispatch.pipeline = &device.pipelines().get(weight ? "rmsnorm_mul" : "rmsnorm", {{0, row_workgroup_size(n)}});
    if (weight) dispatch.bindings.push_back({*weight, gpu::Access::Read});
    dispatch.bindings.push_back({x, gpu::Access::Read});
    dispatch.bindings.push_back({y, gpu::Access::Write});
    dispatch.params(params::RmsNormParams{.n = n, .n_rows = n_rows, .eps = eps});
    dispatch.groups = group_grid(n_rows, device.caps());
    return dispatch;
}

}  // namespace vkllm::ops
