#include "ops/sparse_attention.h"

#include <algorithm>
#include <string>

#include "core/error.h"
#include "gpu/device.h"
#include "ops/matvec.h"
#include "ops/topk.h"
#include "params.h"

namespace vkllm::ops {

namespace {

constexpr uint32_t key_write_workgroup = 64;
constexpr uint32_t score_workgroup = 64;
constexpr uint32_t attention_max_heads = 8;     // query heads sharing one workgroup's K/V reads
constexpr uint32_t attention_target_tile = 128;  // keys per tile (one per invocation)
constexpr uint64_t shared_reserve = 1024;        // workgroup_reduce.glsl's scratch

// Cells the caches hold: n_cells, or a block of them per token from cell t * seq_cells on.
uint64_t cache_cells(uint32_t n_tokens, uint32_t n_cells, uint32_t seq_cells) {
    return seq_cells ? (uint64_t(n_tokens) - 1) * seq_cells + n_cells : n_cells;
}

void check_config(const MsaConfig& config, const char* op) {
    if (config.n_index_head == 0 || config.index_dim == 0 || config.index_dim % 4 != 0 || config.block_size == 0 ||
        config.top_k == 0 || config.top_k > max_top_k)
        fail("{}: {} index heads of {} dims, blocks of {}, top {}: heads, blocks and top-k (at most {}) must be "
             "positive and the dims a multiple of 4", op, config.n_index_head, config.index_dim, config.block_size,
             config.top_k, max_top_k);
}

// Scores [n_tokens][n_index_head][n_blocks], aligned so the top-k scratch after them can be bound.
uint64_t score_bytes(const MsaConfig& config, const MsaShape& shape) {
    const uint64_t bytes = uint64_t(shape.n_tokens) * config.n_index_head * msa_blocks(config, shape.n_cells) * 4;
    return (bytes + 255) / 256 * 256;
}

TopKShape selection_shape(const MsaConfig& config, const MsaShape& shape) {
    return {.n = msa_blocks(config, shape.n_cells), .n_rows = shape.n_tokens * config.n_index_head,
            .k = msa_selected(config, shape.n_cells)};
}

// A tile a multiple of the head_dim_v / 4 invocations that each own 4 output dims, no longer than a
// block needs, and at least a subgroup of 8 (the shader's per-subgroup partials assume it).
uint32_t attention_tile(const AttentionConfig& config, const MsaConfig& msa) {
    const uint32_t dim_threads = config.head_dim_v / 4;
    const uint32_t target = std::min(attention_target_tile, std::max({msa.block_size, dim_threads, 8u}));
    return dim_threads * std::max(1u, target / dim_threads);
}

// Query heads per workgroup: as many of a KV group as shared memory holds, up to 8.
uint32_t attention_heads(const gpu::Capabilities& caps, const AttentionConfig& config, uint32_t tile) {
    const uint32_t group = config.n_head / config.n_head_kv;
    // q_tile, probs, slice_sums and head_partials of shaders/msa_attention.comp
    auto shared_bytes = [&](uint32_t h) { return uint64_t(h) * (config.head_dim_k * 4 + tile * 4 + tile * 16 + tile / 2); };
    for (uint32_t heads = std::min(group, attention_max_heads); heads > 0; --heads)
        if (group % heads == 0 && shared_bytes(heads) + shared_reserve <= caps.max_shared_memory) return heads;
    fail("msa_attention: heads of {} dims do not fit in shared memory", config.head_dim_k);
}

}  // namespace

uint32_t msa_blocks(const MsaConfig& config, uint32_t n_cells) {
    return (n_cells + config.block_size - 1) / config.block_size;
}

uint32_t msa_selected(const MsaConfig& config, uint32_t n_cells) {
    return std::min(config.top_k, msa_blocks(config, n_cells));
}

graph::Dispatch msa_key_write(gpu::Device& device, const MsaConfig& config, uint32_t n_tokens, uint32_t src_stride,
                              uint32_t n_cells, const graph::Region& rows, const graph::Region& slots,
                              const graph::Region& cache) {
    check_config(config, "msa_key_write");
    const uint32_t row = config.index_dim, stride = src_stride ? src_stride : row;
    if (n_tokens == 0 || stride < row || rows.size < (uint64_t(n_tokens) - 1) * stride * 4 + uint64_t(row) * 4 ||
        slots.size < uint64_t(n_tokens) * 4 || cache.size < uint64_t(n_cells) * row * 4)
        fail("msa_key_write: buffers too small for {} keys of {} ({} apart) into {} cells", n_tokens, row, stride, n_cells);
    graph::Dispatch dispatch;
    dispatch.pipeline = &device.pipelines().get("msa_key_write", {{0, key_write_workgroup}});
    // ReadWrite: a dispatch rewrites only some cells.
    dispatch.bindings = {{rows, gpu::Access::Read}, {slots, gpu::Access::Read}, {cache, gpu::Access::ReadWrite}};
    dispatch.params(params::KvWriteParams{.n_tokens = n_tokens, .row_size = row, .src_stride = stride, .n_cells = n_cells});
    const uint64_t invocations = uint64_t(n_tokens) * row;
    dispatch.groups = group_grid((invocations + key_write_workgroup - 1) / key_write_workgroup, device.caps());
    return dispatch;
}

uint64_t msa_select_scratch_bytes(const MsaConfig& config, const MsaShape& shape) {
    return score_bytes(config, shape) + selection_shape(config, shape).scratch_bytes();
}

std::vector<graph::Dispatch> msa_select(gpu::Device& device, const MsaConfig& config, const MsaShape& shape,
                                        const graph::Region& index_q, const graph::Region& key_cache,
                                        const graph::Region& positions, const MsaSelection& selection,
                                        const graph::Region& scratch) {
    check_config(config, "msa_select");
    const uint32_t q_row = config.n_index_head * config.index_dim;
    const uint32_t q_stride = shape.q_stride ? shape.q_stride : q_row;
    if (q_stride < q_row || q_stride % 4 != 0)
        fail("msa_select: index queries {} floats apart: at least {} and a multiple of 4", q_stride, q_row);
    const uint32_t n_blocks = msa_blocks(config, shape.n_cells);
    const gpu::Capabilities& caps = device.caps();
    if (shape.n_tokens == 0 || shape.n_cells == 0 || n_blocks > caps.max_workgroup_count[0] ||
        shape.n_tokens > caps.max_workgroup_count[1] || (shape.seq_cells != 0 && shape.seq_cells < shape.n_cells))
        fail("msa_select: {} tokens over {} blocks exceed the device's dispatch limits (or are none)", shape.n_tokens,
             n_blocks);
    const TopKShape top = selection_shape(config, shape);
    const uint64_t selected_bytes = uint64_t(top.n_rows) * top.k * 4;
    if (index_q.size < (uint64_t(shape.n_tokens) - 1) * q_stride * 4 + uint64_t(q_row) * 4 ||
        key_cache.size < cache_cells(shape.n_tokens, shape.n_cells, shape.seq_cells) * config.index_dim * 4 ||
        positions.size < uint64_t(shape.n_tokens) * 4 ||
        selection.scores.size < selected_bytes || selection.blocks.size < selected_bytes ||
        scratch.size < msa_select_scratch_bytes(config, shape))
        fail("msa_select: buffers too small for {} tokens over {} cells", shape.n_tokens, shape.n_cells);

    const graph::Region scores = scratch.sub(0, score_bytes(config, shape));
    graph::Dispatch score;
    score.pipeline = &device.pipelines().get(
        "msa_block_scores", {{0, score_workgroup}, {1, config.index_dim}, {2, config.n_index_head}});
    score.bindings = {{index_q, gpu::Access::Read}, {key_cache, gpu::Access::Read},
                      {positions, gpu::Access::Read}, {scores, gpu::Access::Write}};
    score.params(params::MsaScoreParams{.n_tokens = shape.n_tokens, .n_cells = shape.n_cells, .n_blocks = n_blocks,
                                        .block_size = config.block_size, .local_blocks = config.local_blocks,
                                        .q_stride = q_stride, .seq_cells = shape.seq_cells});
    score.groups = {n_blocks, shape.n_tokens, 1};

    // A one-pass top-k binds no scratch of its own.
    const graph::Region topk_scratch = top.scratch_bytes() ? scratch.sub(scores.size, top.scratch_bytes()) : scores;
    std::vector<graph::Dispatch> passes{score};
    for (graph::Dispatch& pass : top_k(device, top, scores, selection.scores, selection.blocks, topk_scratch))
        passes.push_back(std::move(pass));
    return passes;
}

graph::Dispatch msa_attention(gpu::Device& device, const AttentionConfig& config, const MsaConfig& msa,
                              const AttentionShape& shape, const MsaAttentionBuffers& buffers) {
    check_config(msa, "msa_attention");
    if (config.n_head_kv == 0 || config.n_head_kv != msa.n_index_head || config.n_head % config.n_head_kv != 0)
        fail("msa_attention: {} query heads over {} KV heads need one index head per KV group, not {}", config.n_head,
             config.n_head_kv, msa.n_index_head);
    if (config.head_dim_k == 0 || config.head_dim_k % 4 != 0 || config.head_dim_v == 0 || config.head_dim_v % 4 != 0)
        fail("msa_attention: head dims {} and {} must be multiples of 4", config.head_dim_k, config.head_dim_v);
    if (config.softcap != 0 || config.n_swa != 0) fail("msa_attention: softcap and sliding window are not supported");
    if (shape.seq_cells != 0 && shape.kv_type != KvType::F16)
        fail("msa_attention: queries of their own sequences need an f16 cache");
    if (shape.seq_cells != 0 && shape.seq_cells < shape.n_cells)
        fail("msa_attention: sequences {} cells apart cannot hold {} cells each", shape.seq_cells, shape.n_cells);
    const uint32_t k_row = config.n_head_kv * config.head_dim_k, v_row = config.n_head_kv * config.head_dim_v;
    if (shape.kv_type == KvType::Q8_0 && (k_row % kv_q8_block != 0 || v_row % kv_q8_block != 0))
        fail("msa_attention: q8_0 cache rows of {} and {} values are not whole blocks of 32", k_row, v_row);
    const uint32_t q_row = config.n_head * config.head_dim_k, q_stride = shape.q_stride ? shape.q_stride : q_row;
    if (q_stride < q_row || q_stride % 4 != 0)
        fail("msa_attention: queries {} floats apart: at least {} and a multiple of 4", q_stride, q_row);
    const uint32_t selected = msa_selected(msa, shape.n_cells);
    const uint64_t cells = cache_cells(shape.n_tokens, shape.n_cells, shape.seq_cells);
    if (cells > UINT32_MAX) fail("msa_attention: {} queries over {} cells each exceed the cache", shape.n_tokens, shape.n_cells);
    const uint64_t selected_bytes = uint64_t(shape.n_tokens) * msa.n_index_head * selected * 4;
    if (shape.n_tokens == 0 || shape.n_cells == 0 ||
        buffers.q.size < (uint64_t(shape.n_tokens) - 1) * q_stride * 4 + uint64_t(q_row) * 4 ||
        buffers.out.size < uint64_t(shape.n_tokens) * config.n_head * config.head_dim_v * 4 ||
        buffers.positions.size < uint64_t(shape.n_tokens) * 4 ||
        buffers.k_cache.size < kv_cache_bytes(shape.kv_type, uint32_t(cells), k_row) ||
        buffers.v_cache.size < kv_cache_bytes(shape.kv_type, uint32_t(cells), v_row) ||
        buffers.selection.scores.size < selected_bytes || buffers.selection.blocks.size < selected_bytes)
        fail("msa_attention: buffers too small for {} queries over {} cells", shape.n_tokens, shape.n_cells);
    const gpu::Capabilities& caps = device.caps();
    const uint32_t tile = attention_tile(config, msa), heads = attention_heads(caps, config, tile);
    if (tile > caps.max_workgroup_invocations || shape.n_tokens > caps.max_workgroup_count[1])
        fail("msa_attention: {} queries in tiles of {} exceed the device's limits", shape.n_tokens, tile);

    graph::Dispatch dispatch;
    dispatch.pipeline = &device.pipelines().get(
        kv_pipeline_name("msa_attention", shape.kv_type, false, device.caps()),
        {{0, tile}, {3, config.head_dim_k}, {4, config.head_dim_v}, {5, heads}});
    dispatch.bindings = {{buffers.q, gpu::Access::Read},
                         {buffers.k_cache, gpu::Access::Read},
                         {buffers.v_cache, gpu::Access::Read},
                         {buffers.positions, gpu::Access::Read},
                         {buffers.selection.scores, gpu::Access::Read},
                         {buffers.selection.blocks, gpu::Access::Read},
                         {buffers.out, gpu::Access::Write}};
    dispatch.params(params::MsaAttentionParams{.n_tokens = shape.n_tokens, .q_stride = q_stride,
                                               .n_head = config.n_head, .n_head_kv = config.n_head_kv,
                                               .n_cells = shape.n_cells, .block_size = msa.block_size,
                                               .top_k = selected, .scale = config.scale,
                                               .seq_cells = shape.seq_cells});
    dispatch.groups = {config.n_head / heads, shape.n_tokens, 1};
    return dispatch;
}

}  // namespace vkllm::ops
