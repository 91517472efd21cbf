#include "ops/kv_write.h"

#include "core/error.h"
#include "gpu/device.h"
#include "ops/matvec.h"
#include "ops/rope.h"
#include "params.h"

namespace vkllm::ops {

graph::Dispatch kv_write(gpu::Device& device, KvType type, const KvWriteShape& shape, const graph::Region& rows,
                         const graph::Region& slots, const graph::Region& cache) {
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
    graph::Dispatch dispatch;
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

graph::Dispatch rope_kv_write(gpu::Device& device, const RopeConfig& rope, KvType type, const RopeKvShape& shape,
                              const graph::Region& phases, const graph::Region& positions, const graph::Region& slots,
                              const graph::Region& qkv, const graph::Region& k_cache, const graph::Region& v_cache) {
    constexpr uint32_t workgroup_size = 64;
    const uint32_t unit = type == KvType::Q8_0 ? kv_q8_block : 2;
    const uint32_t q_row = shape.n_head * shape.head_dim, k_row = shape.n_head_kv * shape.head_dim;
    const uint32_t v_row = shape.n_head_kv * shape.head_dim_v;
    const uint32_t stride = shape.token_stride ? shape.token_stride : q_row + k_row + v_row;
    if (rope.n_dims == 0 || rope.n_dims % 2 != 0 || rope.n_dims > shape.head_dim)
        fail("rope_kv_write: {} rotated dims in heads of {} (must be even, 2 to head_dim)", rope.n_dims,
             shape.head_dim);
    if (shape.temperature_beta != 0 && shape.temperature_length == 0)
        fail("rope_kv_write: an attention temperature needs a positive length");
    if (k_row == 0 || v_row == 0 || k_row % unit != 0 || v_row % unit != 0 || stride < q_row + k_row + v_row)
        fail("rope_kv_write: k rows of {} and v rows of {} values ({} apart): the cache needs multiples of {}", k_row,
             v_row, stride, unit);
    if (phases.size < uint64_t(rope.n_dims) * 4 || positions.size < uint64_t(shape.n_tokens) * 4 ||
        slots.size < uint64_t(shape.n_tokens) * 4 ||
        qkv.size < (uint64_t(shape.n_tokens) - 1) * stride * 4 + uint64_t(q_row + k_row + v_row) * 4 ||
        k_cache.size < kv_cache_bytes(type, shape.n_cells, k_row) ||
        v_cache.size < kv_cache_bytes(type, shape.n_cells, v_row))
        fail("rope_kv_write: buffers too small for {} tokens of {} + {} + {} values into {} cells", shape.n_tokens,
             q_row, k_row, v_row, shape.n_cells);
    graph::Dispatch dispatch;
    dispatch.pipeline = &device.pipelines().get(type == KvType::Q8_0 ? "rope_kv_write_q8_0" : "rope_kv_write_f16",
                                                {{0, workgroup_size}, {3, rope.mode == RopeMode::Neox ? 1u : 0u}});
    // ReadWrite caches: a dispatch rewrites only some cells and (q8_0) merges scales into shared words.
    dispatch.bindings = {{phases, gpu::Access::Read},        {positions, gpu::Access::Read},
                         {slots, gpu::Access::Read},         {qkv, gpu::Access::ReadWrite},
                         {k_cache, gpu::Access::ReadWrite},  {v_cache, gpu::Access::ReadWrite}};
    dispatch.params(params::RopeKvParams{.n_tokens = shape.n_tokens, .n_head = shape.n_head,
                                         .n_head_kv = shape.n_head_kv, .head_dim = shape.head_dim,
                                         .head_dim_v = shape.head_dim_v, .n_dims = rope.n_dims,
                                         .token_stride = stride, .n_cells = shape.n_cells,
                                         .mscale = rope_mscale(rope), .temperature_beta = shape.temperature_beta,
                                         .temperature_length = shape.temperature_length});
    const uint32_t q_head_pairs = (shape.temperature_beta != 0 ? shape.head_dim : rope.n_dims) / 2;
    const uint64_t invocations =
        uint64_t(shape.n_tokens) * (shape.n_head * q_head_pairs + k_row / unit + v_row / unit);
    dispatch.groups = group_grid((invocations + workgroup_size - 1) / workgroup_size, device.caps());
    return dispatch;
}

}  // namespace vkllm::ops
