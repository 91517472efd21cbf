#version 450
// Attention for a few query tokens (decode), split over the keys (flash decoding). A
// workgroup is one subgroup of LANES invocations serving HEADS query heads that share one KV head.
// Workgroup (w, head group, token) takes the w-th of `workers` contiguous shares of the query's
// visible keys, workers being as many as the dispatch has along x or fewer when the keys are few (at
// least p.worker_keys each): the work follows the keys in use, not the cells of the cache. It streams
// its keys in blocks of LANES: lane j forms key j's logits, the block's max comes from a subgroup
// reduction, and every lane adds the probability-weighted values of the block's keys into the output
// dims it owns (an online softmax with no workgroup barrier in the key loop). Its unnormalized output,
// max and sum go to a partial result, an empty one (max -inf, sum 0) where it has no share of the
// keys: every partial slot is written each dispatch, and attn_decode_merge.comp, the next dispatch,
// merges them with no state kept between runs. The loops inside a block are unrolled, so an
// invocation's loop count is its blocks (lavapipe's loop cap). With p.seq_cells != 0 each query is its own sequence's one token, over the n_cells cells from cell
// t * seq_cells (a decode step over several sequences).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "params.h"
layout(local_size_x_id = 0) in;  // = LANES: one subgroup
#include "subgroup_ops.glsl"
#include "ops_common.glsl"
#define K_BINDING 1
#define V_BINDING 2
#include "kv_cache.glsl"
#include "attn_keys.glsl"

layout(constant_id = 3) const uint HEAD_DIM_K = 128;
layout(constant_id = 4) const uint HEAD_DIM_V = 128;
layout(constant_id = 5) const uint HEADS = 1;  // query heads per workgroup, of one KV group
// Every lane holds the queries itself: on CPU devices, where a shared-memory read is a gather per lane
// and a spilled register one vector load; GPUs read them from shared memory.
layout(constant_id = 6) const bool Q_PRIVATE = false;

const uint LANES = gl_WorkGroupSize.x;
const uint DIM4_K = HEAD_DIM_K / 4, DIM4_V = HEAD_DIM_V / 4;
// Cache reads in units of 8 values (one 16-byte load) where both head dims allow, else 4 (the dims
// are multiples of 4; arithmetic, as glslang's optimizer fails on a spec-constant select here).
const uint QUADS = 2 - ((HEAD_DIM_K | HEAD_DIM_V) % 8) / 4;
const uint UNITS_K = DIM4_K / QUADS, UNITS_V = DIM4_V / QUADS;
const uint LANE_UNITS = (UNITS_V + LANES - 1) / LANES;  // a lane's output units: lane + i * LANES

layout(std430, binding = 0) readonly buffer Q { vec4 q4[]; };
layout(std430, binding = 3) readonly buffer Positions { int positions[]; };
layout(std430, binding = 4) writeonly buffer PartialOut { vec4 partial_out4[]; };  // [token][head][worker][DIM4_V]
layout(std430, binding = 5) writeonly buffer PartialStats { vec2 partial_stats[]; };  // [token][head][worker] (max, sum)
layout(push_constant) uniform Push { AttentionParams p; };

shared vec4 q_tile[HEADS * DIM4_K];
vec4 q_private[HEADS * DIM4_K];
vec4 query4(uint i) { return Q_PRIVATE ? q_private[i] : q_tile[i]; }

CacheKeys held;  // the positions the cache holds for this query's sequence
uint seq_base;   // the first cell of that sequence

// Logits of `key` for every head of the group; -inf at or past `end`.
void key_logits(int key, int end, uint kv_head, out float logit[HEADS]) {
    float qk[HEADS];
    [[unroll]] for (uint g = 0; g < HEADS; ++g) qk[g] = 0.0;
    if (key < end) {
        const uint k_row = p.n_head_kv * HEAD_DIM_K;
        const uint k_base = (seq_base + key_cell(held, key, p.n_cells)) * k_row + kv_head * HEAD_DIM_K;
        [[unroll]] for (uint u = 0; u < UNITS_K; ++u) {
            const uint element = k_base + 4 * QUADS * u;
            const mat2x4 k = QUADS == 2 ? k_load8(element, p.n_cells, k_row) : mat2x4(k_load4(element, p.n_cells, k_row), vec4(0.0));
            [[unroll]] for (uint g = 0; g < HEADS; ++g)
                [[unroll]] for (uint c = 0; c < QUADS; ++c) qk[g] += dot(query4(g * DIM4_K + QUADS * u + c), k[c]);
        }
    }
    [[unroll]] for (uint g = 0; g < HEADS; ++g)
        logit[g] = key < end ? attention_logit(qk[g], p.scale, p.softcap) : -1.0 / 0.0;
}

// This workgroup's partial of every head it serves: empty where it has no share of the keys.
void write_empty_partials(uint head0, uint token) {
    if (gl_LocalInvocationID.x < HEADS)
        partial_stats[(token * p.n_head + head0 + gl_LocalInvocationID.x) * gl_NumWorkGroups.x + gl_WorkGroupID.x] =
            vec2(-1.0 / 0.0, 0.0);
}

void main() {
    const uint lane = gl_LocalInvocationID.x;
    const uint head0 = gl_WorkGroupID.y * HEADS, token = gl_WorkGroupID.z;
    const uint kv_head = head0 / (p.n_head / p.n_head_kv);
    const int last_pos = positions[p.seq_cells != 0u ? token : p.n_tokens - 1];
    held = cache_keys(last_pos, p.n_cells);
    seq_base = token * p.seq_cells;
    const ivec2 keys = visible_keys(held, positions[token], last_pos, p.n_swa, p.n_cells, p.causal != 0u);
    if (keys.y < keys.x) {  // no key at all (a negative position): the merge writes zeros
        write_empty_partials(head0, token);
        return;
    }
    // Shares of whole blocks, so that every worker has at least one.
    const uint n_keys = uint(keys.y - keys.x + 1), blocks = (n_keys + LANES - 1) / LANES;
    const uint wanted = clamp((n_keys + p.worker_keys - 1) / p.worker_keys, 1u, gl_NumWorkGroups.x);
    const uint share = (blocks + wanted - 1) / wanted, workers = (blocks + share - 1) / share;
    if (gl_WorkGroupID.x >= workers) {  // uniform
        write_empty_partials(head0, token);
        return;
    }
    const int begin = keys.x + int(gl_WorkGroupID.x * share * LANES);
    const int end = min(keys.y + 1, begin + int(share * LANES));

    const uint q_base = (token * p.q_stride + head0 * HEAD_DIM_K) / 4;
    if (Q_PRIVATE) {
        [[unroll]] for (uint i = 0; i < HEADS * DIM4_K; ++i) q_private[i] = q4[q_base + i];
    } else {
        for (uint i = lane; i < HEADS * DIM4_K; i += LANES) q_tile[i] = q4[q_base + i];
        barrier();
    }

    float running_max[HEADS], lane_sum[HEADS];  // lane_sum: this lane's keys' share of the sum
    vec4 acc[HEADS * LANE_UNITS * QUADS];  // [head][unit][quad]
    [[unroll]] for (uint g = 0; g < HEADS; ++g) {
        running_max[g] = -1.0 / 0.0;
        lane_sum[g] = 0.0;
    }
    [[unroll]] for (uint i = 0; i < HEADS * LANE_UNITS * QUADS; ++i) acc[i] = vec4(0.0);
    const uint v_row = p.v_row;
    for (int key0 = begin; key0 < end; key0 += int(LANES)) {
        float logit[HEADS], prob[HEADS];
        key_logits(key0 + int(lane), end, kv_head, logit);
        [[unroll]] for (uint g = 0; g < HEADS; ++g) {
            // Finite: the block's first key is visible.
            const float new_max = max(running_max[g], subgroupMax(logit[g]));
            const float rescale = exp(running_max[g] - new_max);
            prob[g] = exp(logit[g] - new_max);
            lane_sum[g] = lane_sum[g] * rescale + prob[g];
            running_max[g] = new_max;
            [[unroll]] for (uint i = 0; i < LANE_UNITS * QUADS; ++i) acc[g * LANE_UNITS * QUADS + i] *= rescale;
        }
        [[unroll]] for (uint j = 0; j < LANES; ++j) {
            const int key = key0 + int(j);
            float key_prob[HEADS];
            [[unroll]] for (uint g = 0; g < HEADS; ++g) key_prob[g] = subgroupBroadcast(prob[g], j);
            if (key < end) {
                const uint v_base = (seq_base + key_cell(held, key, p.n_cells)) * v_row + kv_head * HEAD_DIM_V;
                [[unroll]] for (uint i = 0; i < LANE_UNITS; ++i) {
                    const uint unit = lane + i * LANES;
                    if (unit >= UNITS_V) continue;
                    const uint element = v_base + 4 * QUADS * unit;
                    const mat2x4 v = QUADS == 2 ? v_load8(element, p.n_cells, v_row) : mat2x4(v_load4(element, p.n_cells, v_row), vec4(0.0));
                    [[unroll]] for (uint g = 0; g < HEADS; ++g)
                        [[unroll]] for (uint c = 0; c < QUADS; ++c) acc[(g * LANE_UNITS + i) * QUADS + c] += key_prob[g] * v[c];
                }
            }
        }
    }

    [[unroll]] for (uint g = 0; g < HEADS; ++g) {
        const float sum = subgroupAdd(lane_sum[g]);
        const uint partial = (token * p.n_head + head0 + g) * gl_NumWorkGroups.x + gl_WorkGroupID.x;
        [[unroll]] for (uint i = 0; i < LANE_UNITS; ++i) {
            const uint unit = lane + i * LANES;
            if (unit >= UNITS_V) continue;
            [[unroll]] for (uint c = 0; c < QUADS; ++c)
                partial_out4[partial * DIM4_V + QUADS * unit + c] = acc[(g * LANE_UNITS + i) * QUADS + c];
        }
        if (lane == 0u) partial_stats[partial] = vec2(running_max[g], sum);
    }
}
