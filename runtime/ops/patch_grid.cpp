#include "ops/patch_grid.h"

#include "core/error.h"
#include "gpu/device.h"
#include "ops/matvec.h"
#include "ops/workgroup.h"
#include "params.h"

namespace vkllm::ops {
namespace {

constexpr uint32_t preferred_workgroup_size = 256;

graph::Dispatch grid_dispatch(gpu::Device& device, const char* name, PatchGrid grid, uint32_t k, uint64_t n_out,
                              std::initializer_list<graph::Region> inputs, const graph::Region& out) {
    const uint64_t n_in = uint64_t(grid.n_embd) * grid.nx * grid.ny;
    if (grid.n_embd == 0 || grid.nx == 0 || grid.ny == 0 || k == 0 || grid.nx % k || grid.ny % k)
        fail("{}: a {} x {} grid of {} floats does not divide into {} x {} blocks", name, grid.nx, grid.ny,
             grid.n_embd, k, k);
    if (n_out > UINT32_MAX || inputs.begin()->size < n_in * 4 || out.size < n_out * 4)
        fail("{}: {} floats in and {} out do not fit buffers of {} and {} bytes", name, n_in, n_out,
             inputs.begin()->size, out.size);
    graph::Dispatch dispatch;
    const uint32_t workgroup_size = flat_workgroup_size(device.caps(), preferred_workgroup_size);
    dispatch.pipeline = &device.pipelines().get(name, {{0, workgroup_size}});
    for (const graph::Region& input : inputs) dispatch.bindings.push_back({input, gpu::Access::Read});
    dispatch.bindings.push_back({out, gpu::Access::Write});
    dispatch.params(params::PatchGridParams{grid.n_embd, grid.nx, grid.ny, k, uint32_t(n_out)});
    dispatch.groups = group_grid((n_out + workgroup_size - 1) / workgroup_size, device.caps());
    return dispatch;
}

}  // namespace

graph::Dispatch avg_pool_2d(gpu::Device& device, PatchGrid grid, uint32_t k, const graph::Region& in,
                            const graph::Region& out) {
    const uint64_t n_out = k ? uint64_t(grid.n_embd) * (grid.nx / k) * (grid.ny / k) : 0;
    return grid_dispatch(device, "avg_pool_2d", grid, k, n_out, {in}, out);
}

graph::Dispatch patch_merge(gpu::Device& device, PatchGrid grid, uint32_t k, const graph::Region& in,
                            const graph::Region& out) {
    return grid_dispatch(device, "patch_merge", grid, k, uint64_t(grid.n_embd) * grid.nx * grid.ny, {in}, out);
}

graph::Dispatch row_breaks(gpu::Device& device, PatchGrid grid, const graph::Region& in, const graph::Region& row_break,
                           const graph::Region& out) {
    if (row_break.size < uint64_t(grid.n_embd) * 4) fail("row_breaks: a break row of {} bytes", row_break.size);
    const uint64_t n_out = uint64_t(grid.n_embd) * (uint64_t(grid.ny) * (grid.nx + 1) - 1);
    return grid_dispatch(device, "row_breaks", grid, 1, n_out, {in, row_break}, out);
}

}  // namespace vkllm::ops
