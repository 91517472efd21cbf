#version 450
// Decode attention's second dispatch: merges the partial results the decode kernels (attn_decode.comp,
// attn_decode_split.comp) wrote for one query head, out = sum_w e^(m_w - M) o_w / sum_w e^(m_w - M) l_w
// over its workers w with M their largest max. Workers with no share of the keys left an empty partial
// (sum 0) whose output is never read; a head with no key at all gets zeros. Nothing persists between
// dispatches, so one bad run leaves nothing behind. Workgroup (head, token); its invocations split
// the output dims and, where they outnumber them, the workers.
#extension GL_GOOGLE_include_directive : require
#include "params.h"
layout(local_size_x_id = 0) in;  // a power of two

layout(constant_id = 1) const uint HEAD_DIM_V = 128;
const uint WORKGROUP = gl_WorkGroupSize.x, DIM4_V = HEAD_DIM_V / 4;

layout(std430, binding = 0) readonly buffer PartialOut { vec4 partial_out4[]; };     // [token][head][worker][DIM4_V]
layout(std430, binding = 1) readonly buffer PartialStats { vec2 partial_stats[]; };  // [token][head][worker] (max, sum)
layout(std430, binding = 2) writeonly buffer Out { vec4 out4[]; };                   // [token][head][HEAD_DIM_V]
layout(push_constant) uniform Push { AttentionMergeParams p; };

shared vec4 slice_out[WORKGROUP];
shared float reduced[WORKGROUP];

// The workgroup's largest (maximum) or summed value, through shared memory: no subgroup operations
// needed for a kernel this small.
float workgroup_reduce(float value, bool maximum) {
    const uint tid = gl_LocalInvocationID.x;
    reduced[tid] = value;
    barrier();
    for (uint half_size = WORKGROUP / 2; half_size > 0; half_size /= 2) {
        if (tid < half_size)
            reduced[tid] = maximum ? max(reduced[tid], reduced[tid + half_size]) : reduced[tid] + reduced[tid + half_size];
        barrier();
    }
    const float result = reduced[0];
    barrier();
    return result;
}

void main() {
    const uint tid = gl_LocalInvocationID.x, head = gl_WorkGroupID.x, token = gl_WorkGroupID.y;
    const uint first = (token * p.n_head + head) * p.workers, out_base = (token * p.n_head + head) * DIM4_V;
    float lane_max = -1.0 / 0.0;
    for (uint w = tid; w < p.workers; w += WORKGROUP) lane_max = max(lane_max, partial_stats[first + w].x);
    const float max_all = workgroup_reduce(lane_max, true);
    float lane_sum = 0.0;
    for (uint w = tid; w < p.workers; w += WORKGROUP) {
        const vec2 stats = partial_stats[first + w];
        if (stats.y > 0.0) lane_sum += exp(stats.x - max_all) * stats.y;
    }
    const float sum = workgroup_reduce(lane_sum, false);
    const float inverse = sum > 0.0 ? 1.0 / sum : 0.0;

    const uint slices = max(1u, WORKGROUP / DIM4_V);
    for (uint i = tid; i < DIM4_V * slices; i += WORKGROUP) {
        const uint dim4 = i % DIM4_V;
        vec4 acc = vec4(0.0);
        for (uint w = i / DIM4_V; w < p.workers; w += slices) {
            const vec2 stats = partial_stats[first + w];
            if (stats.y > 0.0) acc += exp(stats.x - max_all) * partial_out4[(first + w) * DIM4_V + dim4];
        }
        if (slices == 1u) out4[out_base + dim4] = acc * inverse;
        else slice_out[i] = acc;
    }
    if (slices == 1u) return;  // uniform
    barrier();
    if (tid < DIM4_V) {
        vec4 total = vec4(0.0);
        for (uint s = 0; s < slices; ++s) total += slice_out[s * DIM4_V + tid];
        out4[out_base + tid] = total * inverse;
    }
}
