#include "ops/copy.h"

#include "core/error.h"
#include "gpu/device.h"
#include "params.h"

namespace vkllm::ops {

graph::Dispatch copy_rows(gpu::Device& device, const graph::Region& src, RowBlock from, const graph::Region& dst,
                          RowBlock to, uint32_t rows, uint32_t width) {
    constexpr uint32_t workgroup_size = 64;
    auto needed = [&](RowBlock block) { return (uint64_t(rows - 1) * block.stride + block.offset + width) * 4; };
    if (rows == 0 || width == 0 || width + from.offset > from.stride || width + to.offset > to.stride)
        fail("copy_rows: {} columns at {} / {} do not fit rows of {} / {} floats", width, from.offset, to.offset,
             from.stride, to.stride);
    if (src.size < needed(from) || dst.size < needed(to))
        fail("copy_rows: {} rows need {} and {} bytes, the buffers hold {} and {}", rows, needed(from), needed(to),
             src.size, dst.size);
    if (rows > device.caps().max_workgroup_count[1]) fail("copy_rows: {} rows exceed the device's grid", rows);
    const gpu::Pipeline& pipeline = device.pipelines().get("copy_rows", {{0, workgroup_size}});
    graph::Dispatch dispatch{.pipeline = &pipeline};
    dispatch.bindings = {{src, gpu::Access::Read}, {dst, gpu::Access::Write}};
    dispatch.params(params::CopyRowsParams{width, from.stride, from.offset, to.stride, to.offset});
    dispatch.groups = {pipeline.groups_x(width), rows, 1};
    return dispatch;
}

}  // namespace vkllm::ops
