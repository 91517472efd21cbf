#include "ops/matvec_heads.h"

#include "core/error.h"
#include "gpu/device.h"
#include "params.h"

namespace vkllm::ops {

namespace {

constexpr uint32_t workgroup_size = 64;
// Units of 32 columns one invocation loops over; far below lavapipe's loop cap.
constexpr uint32_t max_units = 4096;

// Bytes from the start of the buffer to the end of the last element a layout addresses.
uint64_t extent(HeadLayout layout, uint32_t n_tokens, uint32_t n_head, uint32_t width) {
    return (uint64_t(n_tokens - 1) * layout.stride + layout.offset + uint64_t(n_head - 1) * layout.head_stride + width) * 4;
}

}  // namespace

graph::Dispatch matvec_heads(gpu::Device& device, const WeightMatrix& weights, uint32_t n_head, uint32_t n_tokens,
                             const graph::Region& x, HeadLayout x_layout, const graph::Region& y, HeadLayout y_layout) {
    if (n_head == 0 || n_tokens == 0 || weights.rows % n_head != 0)
        fail("matvec_heads: {} weight rows cannot be split over {} heads", weights.rows, n_head);
    const uint32_t rows = weights.rows / n_head;
    const std::vector<WeightSegment> segments = weight_segments(weights, "matvec_heads");
    if (segments.size() != 1) fail("matvec_heads: a weight of {} rows split over several buffers", weights.rows);
    if (weights.cols > max_units * weight_unit_elems) fail("matvec_heads: rows of {} columns are too long", weights.cols);
    if (x_layout.stride % 4 != 0 || x_layout.offset % 4 != 0 || x_layout.head_stride % 4 != 0)
        fail("matvec_heads: input strides {}, {} and offset {} must be multiples of 4", x_layout.stride,
             x_layout.head_stride, x_layout.offset);
    if (x.size < extent(x_layout, n_tokens, n_head, weights.cols) || y.size < extent(y_layout, n_tokens, n_head, rows))
        fail("matvec_heads: buffers too small for {} tokens of {} heads ({} to {} values)", n_tokens, n_head,
             weights.cols, rows);
    const gpu::Capabilities& caps = device.caps();
    const uint32_t row_groups = (rows + workgroup_size - 1) / workgroup_size;
    if (n_head > caps.max_workgroup_count[1] || n_tokens > caps.max_workgroup_count[2])
        fail("matvec_heads: {} heads of {} tokens exceed the device's grid", n_head, n_tokens);

    graph::Dispatch dispatch;
    dispatch.pipeline = &device.pipelines().get(weight_pipeline_name("matvec_heads", weights.type, false, caps.texel_reads()),
                                                {{0, workgroup_size}});
    dispatch.bindings = {{segments[0].region, gpu::Access::Read}, {x, gpu::Access::Read}, {y, gpu::Access::Write}};
    dispatch.params(params::MatvecHeadsParams{weights.cols, rows, x_layout.stride, x_layout.offset,
                                              x_layout.head_stride, y_layout.stride, y_layout.offset,
                                              y_layout.head_stride});
    dispatch.groups = {row_groups, n_head, n_tokens};
    return dispatch;
}

}  // namespace vkllm::ops
