#include "ops/gelu.h"

#include "core/error.h"
#include "gpu/device.h"
#include "ops/matvec.h"
#include "ops/workgroup.h"
#include "params.h"

namespace vkllm::ops {

graph::Dispatch gelu(gpu::Device& device, const graph::Region& x, const graph::Region& y, uint32_t n) {
    const uint32_t workgroup_size = flat_workgroup_size(device.caps(), 256);
    if (n == 0 || x.size < uint64_t(n) * 4 || y.size < uint64_t(n) * 4)
        fail("gelu: {} elements need {} bytes, the buffers hold {} and {}", n, uint64_t(n) * 4, x.size, y.size);
    graph::Dispatch dispatch;
    dispatch.pipeline = &device.pipelines().get("gelu", {{0, workgroup_size}});
    dispatch.bindings = {{x, gpu::Access::Read}, {y, gpu::Access::Write}};
    dispatch.params(params::ElementwiseParams{.n = n, .b_n = 0, .factor = 0.0f});
    const uint64_t invocations = (uint64_t(n) + 3) / 4;
    dispatch.groups = group_grid((invocations + workgroup_size - 1) / workgroup_size, device.caps());
    return dispatch;
}

}  // namespace vkllm::ops
