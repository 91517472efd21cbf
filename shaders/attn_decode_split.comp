#version 450
// Attention for a few query tokens (decode) on GPUs: split-K flash decoding, shaped so
// that every compute unit streams the cache with wide, coalesced reads. Workgroup (w, head group,
// token) serves HEADS query heads that share one KV head (each K/V row read serves them all) over the
// w-th of `workers` contiguous shares of the query's visible keys, workers being as many as the
// dispatch has along x or fewer when the keys are few (at least p.worker_keys each).
//
// Inside a workgroup, KEY_LANES consecutive lanes (a key group, within one subgroup) read one key's
// row together, each lane 8 values (16 bytes of an f16 cache) of every KEY_LANES-th unit, so a group's
// load is one contiguous span of the row; the group's partial q.k sums meet through subgroup shuffles.
// Key group g takes keys g, g + KEY_GROUPS, ... of the share, KEYS_PER_STEP at a time, each group
// with its own online softmax: no barrier in the key loop, every lane busy on K and on V. The groups
// then merge through shared memory (one head at a time), and the workgroup's unnormalized output, max
// and sum go to a partial result; a workgroup with no share writes an empty one (max -inf, sum 0), so
// every partial slot is written each dispatch and attn_decode_merge.comp, the next dispatch, merges
// them with no state kept between runs.
//
// With p.seq_cells != 0 each query is its own sequence's one token (a decode step over several
// sequences): query t reads the n_cells cells from cell t * seq_cells, its own position being its
// sequence's last.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_shuffle : require
#include "params.h"
layout(local_size_x_id = 0) in;
#include "ops_common.glsl"
#define K_BINDING 1
#define V_BINDING 2
#include "kv_cache.glsl"
#include "attn_keys.glsl"

layout(constant_id = 3) const uint HEAD_DIM_K = 128;
layout(constant_id = 4) const uint HEAD_DIM_V = 128;
layout(constant_id = 5) const uint HEADS = 1;  // query heads per workgroup, of one KV group
// Lanes reading one key, 1 << KEY_LANES_LOG2: no more than the smallest subgroup or the V units.
layout(constant_id = 6) const uint KEY_LANES_LOG2 = 3;
const uint KEY_LANES = 1u << KEY_LANES_LOG2;

const uint WORKGROUP = gl_WorkGroupSize.x;
const uint KEY_GROUPS = WORKGROUP / KEY_LANES;
const uint KEYS_PER_STEP = 2;  // a group's keys per loop step: their K and V loads in flight together
const uint STEP_KEYS = KEY_GROUPS * KEYS_PER_STEP;
// Cache reads in units of 8 values (one 16-byte load of f16) where both head dims allow, else 4
// (arithmetic, as glslang's optimizer fails on a spec-constant select here).
const uint QUADS = 2 - ((HEAD_DIM_K | HEAD_DIM_V) % 8) / 4;
const uint UNITS_K = HEAD_DIM_K / 4 / QUADS, UNITS_V = HEAD_DIM_V / 4 / QUADS;
// A lane's units: key_lane + i * KEY_LANES for i below these (past UNITS_*: none).
const uint LANE_UNITS_K = (UNITS_K + KEY_LANES - 1) / KEY_LANES, LANE_UNITS_V = (UNITS_V + KEY_LANES - 1) / KEY_LANES;
const uint DIM4_V = HEAD_DIM_V / 4;

layout(std430, binding = 0) readonly buffer Q { vec4 q4[]; };
layout(std430, binding = 3) readonly buffer Positions { int positions[]; };
layout(std430, binding = 4) writeonly buffer PartialOut { vec4 partial_out4[]; };  // [token][head][worker][DIM4_V]
layout(std430, binding = 5) writeonly buffer PartialStats { vec2 partial_stats[]; };  // [token][head][worker] (max, sum)
layout(push_constant) uniform Push { AttentionParams p; };

shared vec4 group_out[KEY_GROUPS * DIM4_V];  // the key groups' outputs of one head
shared vec2 group_stats[KEY_GROUPS * HEADS];  // (max, sum) of each key group and head
shared vec2 head_stats[HEADS];                // the workgroup's (max, sum) per head

CacheKeys held;  // the positions the cache holds for this query's sequence
uint seq_base;   // the first cell of that sequence

mat2x4 k_unit(uint cell, uint kv_head, uint unit) {
    const uint k_row = p.n_head_kv * HEAD_DIM_K, element = cell * k_row + kv_head * HEAD_DIM_K + 4 * QUADS * unit;
    return QUADS == 2 ? k_load8(element, p.n_cells, k_row) : mat2x4(k_load4(element, p.n_cells, k_row), vec4(0.0));
}

mat2x4 v_unit(uint cell, uint kv_head, uint unit) {
    const uint element = cell * p.v_row + kv_head * HEAD_DIM_V + 4 * QUADS * unit;
    return QUADS == 2 ? v_load8(element, p.n_cells, p.v_row) : mat2x4(v_load4(element, p.n_cells, p.v_row), vec4(0.0));
}

float not_inf(float m) { return m == -1.0 / 0.0 ? 0.0 : m; }  // a max to subtract: 0 where no key was seen

// This workgroup's partial of every head it serves: empty where it has no share of the keys.
void write_empty_partials(uint first_partial) {
    if (gl_LocalInvocationID.x < HEADS)
        partial_stats[first_partial + gl_LocalInvocationID.x * gl_NumWorkGroups.x] = vec2(-1.0 / 0.0, 0.0);
}

void main() {
    const uint tid = gl_LocalInvocationID.x, key_lane = tid % KEY_LANES, group = tid / KEY_LANES;
    const uint head0 = gl_WorkGroupID.y * HEADS, token = gl_WorkGroupID.z;
    const uint kv_head = head0 / (p.n_head / p.n_head_kv);
    const bool own_sequence = p.seq_cells != 0u;
    const int last_pos = positions[own_sequence ? token : p.n_tokens - 1];
    held = cache_keys(last_pos, p.n_cells);
    seq_base = token * p.seq_cells;
    const ivec2 keys = visible_keys(held, positions[token], last_pos, p.n_swa, p.n_cells, p.causal != 0u);
    const uint first_partial = (token * p.n_head + head0) * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    if (keys.y < keys.x) {  // no key at all (a negative position): the merge writes zeros
        write_empty_partials(first_partial);
        return;
    }
    // Shares of whole steps, so that every worker has at least one visible key.
    const uint n_keys = uint(keys.y - keys.x + 1), steps = (n_keys + STEP_KEYS - 1) / STEP_KEYS;
    const uint wanted = clamp((n_keys + p.worker_keys - 1) / p.worker_keys, 1u, gl_NumWorkGroups.x);
    const uint share = (steps + wanted - 1) / wanted, workers = (steps + share - 1) / share;
    if (gl_WorkGroupID.x >= workers) {  // uniform
        write_empty_partials(first_partial);
        return;
    }
    const int begin = keys.x + int(gl_WorkGroupID.x * share * STEP_KEYS);
    const int end = min(keys.y + 1, begin + int(share * STEP_KEYS));

    mat2x4 q[HEADS * LANE_UNITS_K];  // [head][unit]: this lane's query values
    [[unroll]] for (uint g = 0; g < HEADS; ++g)
        [[unroll]] for (uint i = 0; i < LANE_UNITS_K; ++i) {
            const uint unit = key_lane + i * KEY_LANES;
            const uint q_base = (token * p.q_stride + (head0 + g) * HEAD_DIM_K) / 4 + QUADS * unit;
            const bool held_unit = LANE_UNITS_K * KEY_LANES == UNITS_K || unit < UNITS_K;
            q[g * LANE_UNITS_K + i] =
                held_unit ? mat2x4(q4[q_base], QUADS == 2 ? q4[q_base + 1] : vec4(0.0)) : mat2x4(0.0);
        }

    float run_max[HEADS], run_sum[HEADS];  // this key group's online softmax
    mat2x4 acc[HEADS * LANE_UNITS_V];      // [head][unit]: its weighted values
    [[unroll]] for (uint g = 0; g < HEADS; ++g) {
        run_max[g] = -1.0 / 0.0;
        run_sum[g] = 0.0;
    }
    [[unroll]] for (uint i = 0; i < HEADS * LANE_UNITS_V; ++i) acc[i] = mat2x4(0.0);

    // Uniform steps: a group's keys past the share are masked (and read the share's last key).
    for (int step0 = begin; step0 < end; step0 += int(STEP_KEYS)) {
        uint cell[KEYS_PER_STEP];
        float logit[KEYS_PER_STEP * HEADS];
        [[unroll]] for (uint s = 0; s < KEYS_PER_STEP; ++s) {
            const int key = step0 + int(s * KEY_GROUPS + group);
            cell[s] = seq_base + key_cell(held, min(key, end - 1), p.n_cells);
            float qk[HEADS];
            [[unroll]] for (uint g = 0; g < HEADS; ++g) qk[g] = 0.0;
            [[unroll]] for (uint i = 0; i < LANE_UNITS_K; ++i) {
                const uint unit = key_lane + i * KEY_LANES;
                if (LANE_UNITS_K * KEY_LANES != UNITS_K && unit >= UNITS_K) continue;
                const mat2x4 k = k_unit(cell[s], kv_head, unit);
                [[unroll]] for (uint g = 0; g < HEADS; ++g)
                    [[unroll]] for (uint c = 0; c < QUADS; ++c) qk[g] += dot(q[g * LANE_UNITS_K + i][c], k[c]);
            }
            [[unroll]] for (uint g = 0; g < HEADS; ++g) {
                // A counted loop: one lavapipe unrolls (its loop cap counts every iteration).
                [[unroll]] for (uint bit = 0; bit < KEY_LANES_LOG2; ++bit) qk[g] += subgroupShuffleXor(qk[g], 1u << bit);
                logit[s * HEADS + g] = key < end ? attention_logit(qk[g], p.scale, p.softcap) : -1.0 / 0.0;
            }
        }
        float prob[KEYS_PER_STEP * HEADS];
        [[unroll]] for (uint g = 0; g < HEADS; ++g) {
            float new_max = run_max[g];
            [[unroll]] for (uint s = 0; s < KEYS_PER_STEP; ++s) new_max = max(new_max, logit[s * HEADS + g]);
            const float rescale = exp(run_max[g] - not_inf(new_max));
            run_max[g] = new_max;
            run_sum[g] *= rescale;
            [[unroll]] for (uint i = 0; i < LANE_UNITS_V; ++i) acc[g * LANE_UNITS_V + i] *= rescale;
            [[unroll]] for (uint s = 0; s < KEYS_PER_STEP; ++s) {
                prob[s * HEADS + g] = exp(logit[s * HEADS + g] - not_inf(new_max));
                run_sum[g] += prob[s * HEADS + g];
            }
        }
        [[unroll]] for (uint s = 0; s < KEYS_PER_STEP; ++s)
            [[unroll]] for (uint i = 0; i < LANE_UNITS_V; ++i) {
                const uint unit = key_lane + i * KEY_LANES;
                if (LANE_UNITS_V * KEY_LANES != UNITS_V && unit >= UNITS_V) continue;
                const mat2x4 v = v_unit(cell[s], kv_head, unit);
                [[unroll]] for (uint g = 0; g < HEADS; ++g) acc[g * LANE_UNITS_V + i] += prob[s * HEADS + g] * v;
            }
    }

    // The key groups merged: M the workgroup's max of a head, each group's part weighed e^(m - M).
    // The loops over the groups stay loops: unrolled, ACO would hold every group's values at once.
    if (key_lane == 0u)
        [[unroll]] for (uint g = 0; g < HEADS; ++g) group_stats[group * HEADS + g] = vec2(run_max[g], run_sum[g]);
    barrier();
    if (tid < HEADS) {
        float max_all = -1.0 / 0.0, sum = 0.0;  // a finite max: the share holds a visible key
        [[dont_unroll]] for (uint j = 0; j < KEY_GROUPS; ++j) max_all = max(max_all, group_stats[j * HEADS + tid].x);
        [[dont_unroll]] for (uint j = 0; j < KEY_GROUPS; ++j)
            sum += exp(group_stats[j * HEADS + tid].x - max_all) * group_stats[j * HEADS + tid].y;
        head_stats[tid] = vec2(max_all, sum);
    }
    barrier();
    [[unroll]] for (uint g = 0; g < HEADS; ++g) {
        const vec2 head = head_stats[g];  // (M, sum)
        const float weight = exp(run_max[g] - head.x);
        [[unroll]] for (uint i = 0; i < LANE_UNITS_V; ++i) {
            const uint unit = key_lane + i * KEY_LANES;
            if (LANE_UNITS_V * KEY_LANES != UNITS_V && unit >= UNITS_V) continue;
            [[unroll]] for (uint c = 0; c < QUADS; ++c)
                group_out[group * DIM4_V + QUADS * unit + c] = weight * acc[g * LANE_UNITS_V + i][c];
        }
        barrier();
        for (uint dim4 = tid; dim4 < DIM4_V; dim4 += WORKGROUP) {
            vec4 total = vec4(0.0);
            [[dont_unroll]] for (uint j = 0; j < KEY_GROUPS; ++j) total += group_out[j * DIM4_V + dim4];
            partial_out4[(first_partial + g * gl_NumWorkGroups.x) * DIM4_V + dim4] = total;
        }
        if (tid == 0u) partial_stats[first_partial + g * gl_NumWorkGroups.x] = head;
        barrier();
    }
}
