#include "ops/kv_write.h"

#include "core/error.h"
#include "gpu/device.h"
#include "ops/matvec.h"
#include "params.h"

namespace vkllm::ops {

gpu::Dispatch kv_write(gpu::Device& device, KvType type, const KvWriteShape& shape, const gpu::BufferRange& rows,
                       const gpu::BufferRange& slots, const gpu::BufferRange& cache) {
    constexpr uint32_t workgroup_size = 64;
    const uint32_t stride = shape.src_stride ? shape.src_stride : shape.row_size;
    const uint32_t granularity = type == KvType::Q8_0 ? kv_q8_block : 2;
    if (shape.row_size == 0 || shape.row_size % granularity != 0 || stride < shape.row_size)
        fail("kv_write: rows of {} values ({} apart): the cache needs a multiple of {}", shape.row_size, stride,
             granularity);
    if (rows.size < (uint64_t(shape.n_tokens) - 1) * stride * 4 + uint64_t(shape.row_size) * 4 ||
        slots.size < uint64_t(shape.n_tokens) * 4 || cache.size < kv_cache_bytes(type, shape.n_cells, shape.row_size))
        fail("kv_write: buffers too small for {} rows of {} into {} cells", shape.n_tokens, shape.row_size,
             shape.n_cells);
    gpu::Dispatch dispatch;
    dispatch.pipeline =
        &device.pipelines().get(type == KvType::Q8_0 ? "kv_write_q8_0" : "kv_write_f16", {{0, workgroup_size}});
    // ReadWrite: a dispatch rewrites only some cells and (q8_0) merges scales into shared words.
    dispatch.bindings = {{rows, gpu::Access::Read}, {slots, gpu::Access::Read}, {cache, gpu::Access::ReadWrite}};
    dispatch.params(params::KvWriteParams{.n_tokens = shape.n_tokens, .row_size = shape.row_size,
                                          .src_stride = stride, .n_cells = shape.n_cells});
    const uint64_t invocations = uint64_t(shape.n_tokens) * shape.row_size / granularity;
    dispatch.groups = group_grid((invocations + workgroup_size - 1) / workgroup_size, device.caps());
    return dispatch;
}

}  // namespace vkllm::ops
