#include "ops/attention.h"

#include <algorithm>
#include <bit>
#include <numeric>
#include <optional>
#include <string>

#include "core/error.h"
#include "gpu/device.h"
#include "ops/workgroup.h"
#include "params.h"

namespace vkllm::ops {

namespace {

constexpr uint32_t decode_max_heads = 8;  // query heads sharing one workgroup's K/V reads
// Each attn_decode lane holds HEADS x its output dims as accumulators: at most this many vec4s.
constexpr uint32_t decode_max_accumulators = 16;
// Decode splits a query's keys over at most this many workgroups per head group, shared among its
// queries (more only where the cache needs them to keep each one under its loop cap), each taking at
// least worker_keys: on GPUs enough workgroups to fill every compute unit; on CPU devices, where every
// workgroup has a sizable fixed cost, about cpu_decode_workgroups in all.
constexpr uint32_t decode_max_workers = 128, gpu_worker_keys = 256, cpu_worker_keys = 512, cpu_decode_workgroups = 16;
// Keys one attn_decode workgroup may take: its loop runs once per block of keys (lavapipe's loop cap),
// and with basic subgroup operations (subgroup_ops.glsl's loops) about once per key and head.
constexpr uint32_t decode_max_worker_keys = 65536, decode_max_worker_keys_basic = 2048;
// attn_decode_split: a lane holds its share of HEADS queries and outputs and of a step's K and V
// rows, at most split_lane_floats floats (registers: 128 keeps RDNA3 from spilling); workgroups of
// split_workgroup invocations, split_workgroups_per_unit of them per compute unit
// (default_compute_units where the device reports none), at most split_max_steps loop steps each
// (lavapipe's loop cap).
constexpr uint32_t split_lane_floats = 128, split_workgroup = 128, split_workgroups_per_unit = 4;
constexpr uint32_t default_compute_units = 16, split_max_steps = 8192;
constexpr uint32_t merge_workgroup = 64;  // attn_decode_merge's invocations per query head
constexpr uint32_t prefill_rows_per_thread = 4;
constexpr uint32_t prefill_tiles_per_pass = 64;  // keeps each invocation's loops in the low thousands
constexpr uint32_t prefill_min_tile = 8;          // keys per tile: 32, 16 or 8 (fit_prefill_launch)
constexpr uint64_t shared_reserve = 1024;        // workgroup_reduce.glsl's scratch and small arrays

uint32_t v_stride(const AttentionConfig& config, const AttentionShape& shape) {
    return shape.v_stride ? shape.v_stride : config.n_head_kv * config.head_dim_v;
}

void check(const AttentionConfig& config, const AttentionShape& shape, const AttentionBuffers& buffers,
           const char* op) {
    if (shape.seq_cells != 0 && shape.kv_type != KvType::F16)
        fail("{}: queries of their own sequences need an f16 cache", op);
    if (shape.seq_cells != 0 && shape.seq_cells < shape.n_cells)
        fail("{}: sequences {} cells apart cannot hold {} cells each", op, shape.seq_cells, shape.n_cells);
    if (config.n_head == 0 || config.n_head_kv == 0 || config.n_head % config.n_head_kv != 0)
        fail("{}: {} query heads cannot share {} KV heads", op, config.n_head, config.n_head_kv);
    if (config.head_dim_k % 4 != 0 || config.head_dim_v % 4 != 0 || config.head_dim_k == 0 || config.head_dim_v == 0)
        fail("{}: head dims {} and {} must be multiples of 4", op, config.head_dim_k, config.head_dim_v);
    const uint32_t k_row = config.n_head_kv * config.head_dim_k, v_row = v_stride(config, shape);
    if (v_row < config.n_head_kv * config.head_dim_v || v_row % 4 != 0)
        fail("{}: V rows {} values apart: a multiple of 4 holding {} heads of {}", op, v_row, config.n_head_kv,
             config.head_dim_v);
    if (shape.kv_type == KvType::Q8_0 && (k_row % kv_q8_block != 0 || v_row % kv_q8_block != 0))
        fail("{}: q8_0 cache rows of {} and {} values are not whole blocks of 32", op, k_row, v_row);
    const uint32_t q_row = config.n_head * config.head_dim_k;
    const uint32_t q_stride = shape.q_stride ? shape.q_stride : q_row;
    if (q_stride < q_row || q_stride % 4 != 0)
        fail("{}: queries {} floats apart: at least {} and a multiple of 4", op, q_stride, q_row);
    const uint64_t q_bytes = (uint64_t(shape.n_tokens) - 1) * q_stride * 4 + uint64_t(q_row) * 4;
    const uint64_t out_bytes = uint64_t(shape.n_tokens) * config.n_head * config.head_dim_v * 4;
    const uint64_t cells =
        shape.seq_cells ? (uint64_t(shape.n_tokens) - 1) * shape.seq_cells + shape.n_cells : shape.n_cells;
    if (shape.n_tokens == 0 || shape.n_cells == 0 || buffers.q.size < q_bytes || buffers.out.size < out_bytes ||
        buffers.positions.size < uint64_t(shape.n_tokens) * 4 || cells > UINT32_MAX ||
        buffers.k_cache.size < kv_cache_bytes(shape.kv_type, uint32_t(cells), k_row) ||
        buffers.v_cache.size < kv_cache_bytes(shape.kv_type, uint32_t(cells), v_row))
        fail("{}: buffers too small for {} queries over {} cells", op, shape.n_tokens, shape.n_cells);
}

// Workgroups per head group a decode dispatch may have: up to decode_max_workers shared among the
// queries, no more than the cells, more only where the loop cap needs them (the basic subgroups' one,
// the lowest: attn_decode_split takes 4 keys or more per step); scratch is sized for them.
uint32_t decode_workers_bound(const AttentionShape& shape) {
    const uint32_t per_query = (decode_max_workers + shape.n_tokens - 1) / shape.n_tokens;
    return std::max(std::min(per_query, shape.n_cells),
                    (shape.n_cells + decode_max_worker_keys_basic - 1) / decode_max_worker_keys_basic);
}

// Bytes of the partial outputs, aligned so the partial statistics after them can be bound.
uint64_t decode_partial_out_bytes(const AttentionConfig& config, const AttentionShape& shape) {
    const uint64_t bytes = uint64_t(shape.n_tokens) * config.n_head * decode_workers_bound(shape) * config.head_dim_v * 4;
    return (bytes + 255) / 256 * 256;
}

// One subgroup per decode workgroup: the driver's size, required where the device lets it vary.
gpu::PipelineOptions decode_pipeline_options(const gpu::Capabilities& caps, const AttentionConfig& config,
                                             uint32_t lanes, uint32_t heads) {
    const uint32_t q_private = caps.type == VK_PHYSICAL_DEVICE_TYPE_CPU;
    gpu::PipelineOptions options{{{0, lanes}, {3, config.head_dim_k}, {4, config.head_dim_v}, {5, heads}, {6, q_private}}, 0};
    if (caps.subgroup_size_control && caps.min_subgroup_size != caps.max_subgroup_size)
        options.required_subgroup_size = lanes;
    return options;
}

// Query heads per decode workgroup: as many of a KV group as the lanes' accumulators and shared
// memory hold, up to 8.
uint32_t decode_heads(const gpu::Capabilities& caps, const AttentionConfig& config, uint32_t lanes) {
    const uint32_t group = config.n_head / config.n_head_kv;
    // shaders/attn_decode.comp's QUADS and LANE_UNITS
    const uint32_t quads = config.head_dim_k % 8 == 0 && config.head_dim_v % 8 == 0 ? 2 : 1;
    const uint32_t lane_vec4s = (config.head_dim_v / 4 / quads + lanes - 1) / lanes * quads;
    for (uint32_t heads = std::min(group, decode_max_heads); heads > 0; --heads)
        if (group % heads == 0 && heads * lane_vec4s <= std::max(decode_max_accumulators, lane_vec4s) &&
            uint64_t(heads) * config.head_dim_k * 4 + shared_reserve <= caps.max_shared_memory)
            return heads;
    fail("attention_decode: heads of {} dims do not fit in shared memory", config.head_dim_k);
}

// attn_decode_split's launch: HEADS query heads per workgroup (as many of a KV group as the lanes'
// registers hold, up to 8), KEY_LANES lanes per key (at least 8, a 128-byte f16 span per load, more
// where registers need it; within the smallest subgroup and the V units), and a workgroup whose
// shared memory fits.
constexpr uint32_t split_keys_per_step = 2;  // the shader's KEYS_PER_STEP

struct SplitLaunch {
    uint32_t workgroup, key_lanes, heads;
    uint32_t step_keys() const { return workgroup / key_lanes * split_keys_per_step; }  // the shader's STEP_KEYS
};

std::optional<SplitLaunch> fit_split_launch(const gpu::Capabilities& caps, const AttentionConfig& config) {
    if (caps.type == VK_PHYSICAL_DEVICE_TYPE_CPU || !caps.has_subgroup(VK_SUBGROUP_FEATURE_SHUFFLE_BIT))
        return std::nullopt;
    // the shader's QUADS, UNITS_K and UNITS_V
    const uint32_t quads = config.head_dim_k % 8 == 0 && config.head_dim_v % 8 == 0 ? 2 : 1;
    const uint32_t units_k = config.head_dim_k / 4 / quads, units_v = config.head_dim_v / 4 / quads;
    const uint32_t widest = std::bit_floor(std::min({std::max(1u, caps.min_subgroup_size), units_v, 32u}));
    const uint32_t group = config.n_head / config.n_head_kv;
    auto lane_floats = [&](uint32_t heads, uint32_t lanes) {
        const uint32_t lane_units = (units_k + lanes - 1) / lanes + (units_v + lanes - 1) / lanes;
        return (heads + split_keys_per_step) * lane_units * 4 * quads;
    };
    SplitLaunch launch{0, widest, 1};
    for (uint32_t heads = std::min(group, decode_max_heads); heads > 1 && launch.heads == 1; --heads)
        for (uint32_t lanes = std::min(8u, widest); group % heads == 0 && lanes <= widest; lanes *= 2)
            if (lane_floats(heads, lanes) <= split_lane_floats) {
                launch = {0, lanes, heads};
                break;
            }
    if (launch.heads == 1)
        for (uint32_t lanes = std::min(8u, widest); lanes <= widest; lanes *= 2)
            if (lane_floats(1, lanes) <= split_lane_floats || lanes == widest) {
                launch.key_lanes = lanes;
                break;
            }
    // group_out, group_stats and head_stats of the shader
    auto shared_bytes = [&](uint64_t workgroup) {
        const uint64_t key_groups = workgroup / launch.key_lanes;
        return key_groups * config.head_dim_v * 4 + (key_groups + 1) * launch.heads * 8;
    };
    for (launch.workgroup = flat_workgroup_size(caps, split_workgroup); launch.workgroup >= 2 * launch.key_lanes;
         launch.workgroup /= 2)
        if (shared_bytes(launch.workgroup) <= caps.max_shared_memory) return launch;
    return std::nullopt;
}

params::AttentionParams attention_params(const AttentionConfig& config, const AttentionShape& shape,
                                         uint32_t worker_keys, uint32_t key_begin, uint32_t key_end) {
    return {.n_tokens = shape.n_tokens,
            .q_stride = shape.q_stride ? shape.q_stride : config.n_head * config.head_dim_k,
            .n_head = config.n_head, .n_head_kv = config.n_head_kv,
            .n_cells = shape.n_cells, .worker_keys = worker_keys, .key_begin = key_begin, .key_end = key_end,
            .n_swa = config.n_swa, .scale = config.scale, .softcap = config.softcap, .causal = config.causal,
            .v_row = v_stride(config, shape), .seq_cells = shape.seq_cells};
}

// Prefill: a workgroup of (head_dim_v / 4) x row_threads invocations owns rows = row_threads * 4
// queries; tiles of keys as large as shared memory allows. The cooperative-matrix kernel's workgroup
// is rows / m subgroups, its rows a KV head's queries (ops/coopmat.h).
struct PrefillLaunch {
    uint32_t workgroup_size, rows, tile_keys;
    bool float16;  // the variant holding tiles in f16
    std::optional<CoopmatShape> coopmat;
};

std::optional<PrefillLaunch> fit_prefill_launch(const gpu::Capabilities& caps, const AttentionConfig& config) {
    const bool float16 = caps.use_float16() && config.float16;
    const uint64_t tile_element_bytes = float16 ? 2 : 4;
    const uint32_t dim_threads = config.head_dim_v / 4;
    const uint32_t row_threads = std::max(1u, 128 / dim_threads);
    const uint32_t rows = row_threads * prefill_rows_per_thread;
    const uint32_t widest = std::max(config.head_dim_k, config.head_dim_v);
    if (dim_threads < prefill_rows_per_thread || dim_threads * row_threads > caps.max_workgroup_invocations)
        return std::nullopt;
    for (uint32_t tile = 32; tile >= prefill_min_tile; tile /= 2) {
        const uint64_t shared = tile_element_bytes * (rows * config.head_dim_k + tile * widest) + 4ull * rows * tile;
        if (shared + rows * 24 + shared_reserve <= caps.max_shared_memory)
            return PrefillLaunch{dim_threads * row_threads, rows, tile, float16};
    }
    return std::nullopt;
}

// shaders/attn_prefill_coopmat.comp: 4, 2 or 1 subgroups of m rows, the most whose tiles fit shared
// memory, over tiles of at least 32 keys (whole products of the shape). Head dims must be whole
// products too, and whole f16vec4 pairs.
std::optional<PrefillLaunch> fit_coopmat_prefill_launch(const gpu::Capabilities& caps, const AttentionConfig& config,
                                                        const CoopmatShape& shape) {
    const uint32_t dk = config.head_dim_k, dv = config.head_dim_v;
    if (dk % 8 != 0 || dk % shape.k != 0 || dv % shape.n != 0) return std::nullopt;
    const uint32_t unit = std::lcm(std::lcm(shape.n, shape.k), 8u);
    const uint32_t tile = (32 + unit - 1) / unit * unit;
    for (uint32_t subgroups = 4; subgroups >= 1; subgroups /= 2) {
        const uint64_t rows = uint64_t(subgroups) * shape.m;
        // q_tile, kv_tile, probs (f16vec4 lines of 8 bytes), scores and o_tile (floats), the row state
        const uint64_t shared = 8 * (rows * (dk / 4 + 2) + tile * (std::max(dk, dv) / 4 + 2) + rows * (tile / 4 + 2)) +
                                4 * (rows * (tile + 4) + rows * (dv + 4)) + 24 * rows;
        if (shared + shared_reserve <= caps.max_shared_memory &&
            subgroups * shape.subgroup_size <= caps.max_workgroup_invocations)
            return PrefillLaunch{subgroups * shape.subgroup_size, uint32_t(rows), tile, false, shape};
    }
    return std::nullopt;
}

// The cooperative-matrix kernel with `coopmat` (refused where it cannot run), else with the device's
// shape where its kernels are on, it reads storage buffers and the heads fit; else the f32/f16 one.
PrefillLaunch prefill_launch(const gpu::Capabilities& caps, const AttentionConfig& config,
                             const std::optional<CoopmatShape>& coopmat) {
    if (coopmat) {
        check_coopmat_shape(*coopmat, caps, "attention_prefill");
        if (auto launch = fit_coopmat_prefill_launch(caps, config, *coopmat)) return *launch;
        fail("attention_prefill: heads of {} and {} dims do not fit the cooperative-matrix kernel ({}x{}x{} "
             "products, the device's shared memory)", config.head_dim_k, config.head_dim_v, coopmat->m, coopmat->n,
             coopmat->k);
    }
    if (std::optional<CoopmatShape> shape = coopmat_shape(caps); shape && !caps.texel_reads())
        if (auto launch = fit_coopmat_prefill_launch(caps, config, *shape)) return *launch;
    if (auto launch = fit_prefill_launch(caps, config)) return *launch;
    fail("attention_prefill: heads of {} and {} dims do not fit the kernel (head_dim_v from 16 to {}, and the "
         "device's shared memory)", config.head_dim_k, config.head_dim_v, 4 * caps.max_workgroup_invocations);
}

}  // namespace

std::string kv_pipeline_name(std::string_view kernel, KvType type, bool float16, const gpu::Capabilities& caps) {
    return fmt::format("{}{}{}{}", kernel, type == KvType::Q8_0 ? "_q8_0" : "_f16", float16 ? "_f16" : "",
                       caps.texel_reads() ? "_texel" : "");
}

namespace {

void require_scratch(const AttentionBuffers& buffers, uint64_t needed, const char* op) {
    if (buffers.scratch.size < needed) fail("{}: scratch of {} bytes, {} needed", op, buffers.scratch.size, needed);
}

}  // namespace

bool attention_prefill_supports(const gpu::Capabilities& caps, const AttentionConfig& config) {
    return fit_prefill_launch(caps, config).has_value();
}

bool attention_prefill_pays(const gpu::Capabilities& caps, const AttentionConfig& config) {
    return caps.type != VK_PHYSICAL_DEVICE_TYPE_CPU && attention_prefill_supports(caps, config);
}

uint64_t attention_decode_scratch_bytes(const AttentionConfig& config, const AttentionShape& shape) {
    return decode_partial_out_bytes(config, shape) +
           uint64_t(shape.n_tokens) * config.n_head * decode_workers_bound(shape) * 8;
}

std::vector<graph::Dispatch> attention_decode(gpu::Device& device, const AttentionConfig& config,
                                              const AttentionShape& shape, const AttentionBuffers& buffers,
                                              uint32_t workers_wanted) {
    check(config, shape, buffers, "attention_decode");
    require_scratch(buffers, attention_decode_scratch_bytes(config, shape), "attention_decode");
    const gpu::Capabilities& caps = device.caps();
    const std::optional<SplitLaunch> split = fit_split_launch(caps, config);
    const uint32_t lanes = std::max(1u, caps.subgroup_size);
    const uint32_t heads = split ? split->heads : decode_heads(caps, config, lanes);
    const uint32_t head_groups = config.n_head / heads;
    const bool cpu = caps.type == VK_PHYSICAL_DEVICE_TYPE_CPU;
    // Workers per (query, head group): with the split kernel enough for split_workgroups_per_unit
    // workgroups on every compute unit, on CPU devices about cpu_decode_workgroups in all.
    const uint32_t query_groups = head_groups * shape.n_tokens;
    const uint32_t compute_units = caps.compute_units ? caps.compute_units : default_compute_units;
    uint32_t workers = workers_wanted;
    if (!workers && split) workers = (compute_units * split_workgroups_per_unit + query_groups - 1) / query_groups;
    else if (!workers && cpu) workers = (cpu_decode_workgroups + query_groups - 1) / query_groups;
    else if (!workers) workers = (shape.n_cells + gpu_worker_keys - 1) / gpu_worker_keys;
    // Keys a workgroup may take under lavapipe's loop cap: a loop step per STEP_KEYS keys (split) or
    // per subgroup of keys.
    const bool arithmetic = caps.has_subgroup(VK_SUBGROUP_FEATURE_ARITHMETIC_BIT);
    const uint64_t max_worker_keys = split        ? uint64_t(split_max_steps) * split->step_keys()
                                     : arithmetic ? decode_max_worker_keys
                                                  : decode_max_worker_keys_basic;
    const uint32_t most = decode_workers_bound(shape);
    workers = std::max(std::min(workers, most), uint32_t((shape.n_cells + max_worker_keys - 1) / max_worker_keys));
    if (shape.n_tokens > caps.max_workgroup_count[2] || head_groups > caps.max_workgroup_count[1] || workers > most ||
        workers > caps.max_workgroup_count[0] || config.n_head > caps.max_workgroup_count[0] ||
        shape.n_tokens > caps.max_workgroup_count[1])
        fail("attention_decode: {} queries over {} cells exceed the device's dispatch limits", shape.n_tokens, shape.n_cells);
    const uint64_t out_bytes = decode_partial_out_bytes(config, shape);
    const graph::Region partial_out = buffers.scratch.sub(0, out_bytes);
    const graph::Region partial_stats = buffers.scratch.sub(out_bytes, buffers.scratch.size - out_bytes);

    graph::Dispatch decode;
    if (split)
        decode.pipeline = &device.pipelines().get(
            kv_pipeline_name("attn_decode_split", shape.kv_type, false, caps),
            {{{0, split->workgroup}, {3, config.head_dim_k}, {4, config.head_dim_v}, {5, heads},
              {6, uint32_t(std::countr_zero(split->key_lanes))}}});
    else
        decode.pipeline = &device.pipelines().get(kv_pipeline_name("attn_decode", shape.kv_type, false, caps),
                                                  decode_pipeline_options(caps, config, lanes, heads));
    decode.bindings = {{buffers.q, gpu::Access::Read},
                       {buffers.k_cache, gpu::Access::Read},
                       {buffers.v_cache, gpu::Access::Read},
                       {buffers.positions, gpu::Access::Read},
                       {partial_out, gpu::Access::Write},
                       {partial_stats, gpu::Access::Write}};
    // At least two steps per workgroup on GPUs: fewer keys than that share no better.
    const uint32_t worker_keys = workers_wanted ? 1 : cpu ? cpu_worker_keys : split ? 2 * split->step_keys() : gpu_worker_keys;
    decode.params(attention_params(config, shape, worker_keys, 0, shape.n_cells));
    decode.groups = {workers, head_groups, shape.n_tokens};
    // The merge, a dispatch of its own: the barrier between them orders the partials before their
    // reads on any device and memory model, and no counter outlives a run.
    graph::Dispatch merge;
    merge.pipeline = &device.pipelines().get(
        "attn_decode_merge", {{{0, flat_workgroup_size(caps, merge_workgroup)}, {1, config.head_dim_v}}});
    merge.bindings = {{partial_out, gpu::Access::Read}, {partial_stats, gpu::Access::Read}, {buffers.out, gpu::Access::Write}};
    merge.params(params::AttentionMergeParams{.n_head = config.n_head, .workers = workers});
    merge.groups = {config.n_head, shape.n_tokens, 1};
    return {decode, merge};
}

namespace {

// Prefill's passes over `keys` with tiles of tile_keys, and the bytes of its scratch before their arguments.
uint32_t prefill_spans(uint32_t keys, uint32_t tile_keys) {
    const uint32_t span = tile_keys * prefill_tiles_per_pass;
    return (keys + span - 1) / span;
}

uint64_t prefill_stats_bytes(const AttentionConfig& config, const AttentionShape& shape) {
    return (uint64_t(shape.n_tokens) * config.n_head * 8 + 15) / 16 * 16;
}

}  // namespace

// The running (max, sum) per query and head, then where the cache takes more than one pass, each
// pass's VkDispatchIndirectCommand.
uint64_t attention_prefill_scratch_bytes(const AttentionConfig& config, const AttentionShape& shape) {
    const uint32_t spans = prefill_spans(shape.n_cells, prefill_min_tile);
    return prefill_stats_bytes(config, shape) + (spans > 1 ? uint64_t(spans) * 12 : 0);
}

std::vector<graph::Dispatch> attention_prefill(gpu::Device& device, const AttentionConfig& config,
                                               const AttentionShape& shape, const AttentionBuffers& buffers,
                                               uint32_t key_limit, std::optional<CoopmatShape> coopmat) {
    check(config, shape, buffers, "attention_prefill");
    if (shape.seq_cells != 0) fail("attention_prefill: queries of their own sequences take attention_decode");
    require_scratch(buffers, attention_prefill_scratch_bytes(config, shape), "attention_prefill");
    const gpu::Capabilities& caps = device.caps();
    const PrefillLaunch launch = prefill_launch(caps, config, coopmat);
    const gpu::Pipeline& pipeline =
        launch.coopmat
            ? device.pipelines().get(
                  coopmat_kernel_name("attn_prefill_coopmat", *launch.coopmat) +
                      (shape.kv_type == KvType::Q8_0 ? "_q8_0" : "_f16"),
                  coopmat_pipeline_options(*launch.coopmat, caps, launch.rows / launch.coopmat->m,
                                           {{3, config.head_dim_k}, {4, config.head_dim_v}, {5, launch.rows},
                                            {6, launch.tile_keys}, {7, launch.coopmat->m}, {8, launch.coopmat->n},
                                            {9, launch.coopmat->k}}))
            : device.pipelines().get(kv_pipeline_name("attn_prefill", shape.kv_type, launch.float16, caps),
                                     {{0, launch.workgroup_size}, {3, config.head_dim_k}, {4, config.head_dim_v},
                                      {5, launch.rows}, {6, launch.tile_keys}});
    // The cooperative-matrix kernel's rows are a KV head's queries, the group's heads of each token.
    const uint64_t rows = launch.coopmat ? uint64_t(shape.n_tokens) * (config.n_head / config.n_head_kv)
                                         : shape.n_tokens;
    const uint32_t heads = launch.coopmat ? config.n_head_kv : config.n_head;
    const uint64_t tiles = (rows + launch.rows - 1) / launch.rows;
    if (tiles > caps.max_workgroup_count[0] || heads > caps.max_workgroup_count[1])
        fail("attention_prefill: {} queries exceed the device's dispatch limits", shape.n_tokens);
    const uint32_t keys = key_limit ? std::min(key_limit, shape.n_cells) : shape.n_cells;
    const uint32_t span_keys = launch.tile_keys * prefill_tiles_per_pass, spans = prefill_spans(keys, launch.tile_keys);
    const uint64_t stats_bytes = prefill_stats_bytes(config, shape);
    const graph::Region stats = buffers.scratch.sub(0, stats_bytes);
    std::vector<graph::Dispatch> passes;
    // Past one pass, a first one gives each pass its workgroups only where a query sees its keys.
    std::optional<graph::Region> commands;
    if (spans > 1) {
        commands = buffers.scratch.sub(stats_bytes, uint64_t(spans) * 12);
        graph::Dispatch& sizing = passes.emplace_back();
        sizing.pipeline = &device.pipelines().get("attn_prefill_spans");
        sizing.bindings = {{buffers.positions, gpu::Access::Read}, {*commands, gpu::Access::Write}};
        sizing.params(params::AttentionSpanParams{.n_tokens = shape.n_tokens, .n_cells = shape.n_cells,
                                                  .n_swa = config.n_swa, .causal = config.causal,
                                                  .span_keys = span_keys, .n_spans = spans, .key_end = keys,
                                                  .groups_x = uint32_t(tiles), .groups_y = heads});
        sizing.groups = {1, 1, 1};
    }
    for (uint32_t span = 0; span < spans; ++span) {
        const uint32_t begin = span * span_keys;
        graph::Dispatch& pass = passes.emplace_back();
        pass.pipeline = &pipeline;
        pass.bindings = {{buffers.q, gpu::Access::Read},          {buffers.k_cache, gpu::Access::Read},
                         {buffers.v_cache, gpu::Access::Read},    {buffers.positions, gpu::Access::Read},
                         {buffers.out, gpu::Access::ReadWrite},   {stats, gpu::Access::ReadWrite}};
        pass.params(attention_params(config, shape, 0, begin, std::min(keys, begin + span_keys)));
        if (commands) pass.indirect = commands->sub(uint64_t(span) * 12, 12);
        else pass.groups = {uint32_t(tiles), heads, 1};
    }
    return passes;
}

}  // namespace vkllm::ops
