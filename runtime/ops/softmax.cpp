#include "ops/softmax.h"

#include "core/error.h"
#include "gpu/device.h"
#include "ops/matvec.h"
#include "ops/rmsnorm.h"
#include "params.h"

namespace vkllm::ops {

graph::Dispatch softmax(gpu::Device& device, const graph::Region& x, const graph::Region& y, uint32_t n,
                        uint32_t n_rows, float scale) {
    const uint64_t bytes = uint64_t(n) * n_rows * 4;
    if (n == 0 || x.size < bytes || y.size < bytes)
        fail("softmax: {} rows of {} need {} bytes, got x of {} and y of {}", n_rows, n, bytes, x.size, y.size);
    graph::Dispatch dispatch;
    dispatch.pipeline = &device.pipelines().get("softmax", {{0, row_workgroup_size(device.caps(), n)}});
    dispatch.bindings = {{x, gpu::Access::Read}, {y, gpu::Access::Write}};
    dispatch.params(params::SoftmaxParams{.n = n, .n_rows = n_rows, .scale = scale});
    dispatch.groups = group_grid(n_rows, device.caps());
    return dispatch;
}

}  // namespace vkllm::ops
