#include "ops/topk.h"

#include "core/error.h"
#include "gpu/device.h"
#include "ops/workgroup.h"
#include "params.h"

namespace vkllm::ops {

namespace {

constexpr uint32_t workgroup_size = 256;
// Elements per first-pass workgroup: 16 per invocation and round, so that k rounds stay far below
// lavapipe's loop cap (k * 16 iterations plus the reductions).
constexpr uint32_t chunk_elems = 16 * workgroup_size;

graph::Dispatch pass(gpu::Device& device, const char* name, std::vector<graph::Access> bindings,
                     const params::TopKParams& params, uint32_t chunks) {
    graph::Dispatch dispatch;
    dispatch.pipeline = &device.pipelines().get(name, {{0, flat_workgroup_size(device.caps(), workgroup_size)}});
    dispatch.bindings = std::move(bindings);
    dispatch.params(params);
    dispatch.groups = {chunks, params.n_rows, 1};
    return dispatch;
}

}  // namespace

uint32_t TopKShape::chunks() const { return (n + chunk_elems - 1) / chunk_elems; }

// Candidate values, then their indices, each region aligned for binding (Vulkan allows offset
// alignments up to 256 bytes).
static uint64_t candidate_region_bytes(const TopKShape& shape) {
    return (uint64_t(shape.n_rows) * shape.chunks() * shape.k * 4 + 255) / 256 * 256;
}

uint64_t TopKShape::scratch_bytes() const { return chunks() == 1 ? 0 : 2 * candidate_region_bytes(*this); }

std::vector<graph::Dispatch> top_k(gpu::Device& device, const TopKShape& shape, const graph::Region& x,
                                   const graph::Region& values, const graph::Region& indices,
                                   const graph::Region& scratch) {
    const uint64_t out_bytes = uint64_t(shape.n_rows) * shape.k * 4;
    if (shape.k == 0 || shape.k > max_top_k || shape.k > shape.n)
        fail("top_k: k = {} for rows of {} (1 to {} and at most the row)", shape.k, shape.n, max_top_k);
    if (shape.n_rows > device.caps().max_workgroup_count[1])
        fail("top_k: {} rows exceed the device's dispatch limit", shape.n_rows);
    if (x.size < uint64_t(shape.n) * shape.n_rows * 4 || values.size < out_bytes || indices.size < out_bytes ||
        scratch.size < shape.scratch_bytes())
        fail("top_k: buffers too small for {} rows of {}, k = {}", shape.n_rows, shape.n, shape.k);
    const uint32_t chunks = shape.chunks();
    const params::TopKParams first{.n = shape.n, .n_rows = shape.n_rows, .k = shape.k, .chunk = chunk_elems};
    if (chunks == 1)
        return {pass(device, "topk_partial",
                     {{x, gpu::Access::Read}, {values, gpu::Access::Write}, {indices, gpu::Access::Write}}, first, 1)};
    const uint64_t region = candidate_region_bytes(shape);  // [n_rows][chunks * k] each
    const graph::Region candidate_values = scratch.sub(0, region);
    const graph::Region candidate_indices = scratch.sub(region, region);
    const uint32_t candidates = chunks * shape.k;
    const params::TopKParams merge{.n = candidates, .n_rows = shape.n_rows, .k = shape.k, .chunk = candidates};
    return {pass(device, "topk_partial",
                 {{x, gpu::Access::Read}, {candidate_values, gpu::Access::Write},
                  {candidate_indices, gpu::Access::Write}},
                 first, chunks),
            pass(device, "topk_merge",
                 {{candidate_values, gpu::Access::Read}, {candidate_indices, gpu::Access::Read},
                  {values, gpu::Access::Write}, {indices, gpu::Access::Write}},
                 merge, 1)};
}

}  // namespace vkllm::ops
