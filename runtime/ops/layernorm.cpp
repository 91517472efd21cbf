#include "ops/layernorm.h"

#include "core/error.h"
#include "gpu/device.h"
#include "ops/matvec.h"
#include "ops/rmsnorm.h"
#include "params.h"

namespace vkllm::ops {

graph::Dispatch layernorm(gpu::Device& device, const graph::Region& x, const graph::Region& weight,
                          const graph::Region& bias, const graph::Region& y, uint32_t n, uint32_t n_rows, float eps) {
    const uint64_t bytes = uint64_t(n) * n_rows * 4;
    if (n == 0 || x.size < bytes || y.size < bytes || weight.size < uint64_t(n) * 4 || bias.size < uint64_t(n) * 4)
        fail("layernorm: {} rows of {} need x and y of {} bytes and a weight and bias of {}, got {}, {}, {} and {}",
             n_rows, n, bytes, n * 4, x.size, y.size, weight.size, bias.size);
    graph::Dispatch dispatch;
    dispatch.pipeline = &device.pipelines().get("layernorm", {{0, row_workgroup_size(device.caps(), n)}});
    dispatch.bindings = {{weight, gpu::Access::Read}, {bias, gpu::Access::Read}, {x, gpu::Access::Read},
                         {y, gpu::Access::Write}};
    dispatch.params(params::RmsNormParams{.n = n, .n_rows = n_rows, .eps = eps});
    dispatch.groups = group_grid(n_rows, device.caps());
    return dispatch;
}

}  // namespace vkllm::ops
