#include "ops/embed.h"

#include "core/error.h"
#include "gpu/device.h"
#include "params.h"

namespace vkllm::ops {

std::vector<graph::Dispatch> get_rows(gpu::Device& device, const WeightMatrix& weights, const graph::Region& ids,
                                      const graph::Region& out, uint32_t n_tokens) {
    const std::vector<WeightSegment> segments = weight_segments(weights, "get_rows");
    if (ids.size < uint64_t(n_tokens) * 4 || out.size < uint64_t(n_tokens) * weights.cols * 4)
        fail("get_rows: {} tokens of {} columns need ids of {} bytes and out of {} bytes, got {} and {}", n_tokens,
             weights.cols, uint64_t(n_tokens) * 4, uint64_t(n_tokens) * weights.cols * 4, ids.size, out.size);
    const gpu::Pipeline& pipeline = device.pipelines().get(weight_pipeline_name("get_rows", weights.type, false, false),
                                                           {{0, 64}});
    const uint64_t units = uint64_t(n_tokens) * ((weights.cols + weight_unit_elems - 1) / weight_unit_elems);
    std::vector<graph::Dispatch> dispatches;
    for (const WeightSegment& segment : segments) {
        graph::Dispatch& dispatch = dispatches.emplace_back();
        dispatch.pipeline = &pipeline;
        dispatch.bindings = {{segment.region, gpu::Access::Read}, {ids, gpu::Access::Read}, {out, gpu::Access::Write}};
        dispatch.params(params::GetRowsParams{.n_cols = weights.cols, .n_tokens = n_tokens,
                                              .row_offset = segment.row_offset, .row_count = segment.row_count,
                                              .n_rows = weights.rows});
        dispatch.groups = group_grid((units + 63) / 64, device.caps());
    }
    return dispatches;
}

}  // namespace vkllm::ops
