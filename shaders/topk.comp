#version 450
// Top-k (argmax is k = 1) of each row, in two passes so that vocabulary-sized rows spread over many
// workgroups and no invocation loops long (lavapipe.md):
//   topk_partial: workgroup (c, row) takes elements c*chunk .. of x[row] and writes its k best;
//   topk_merge:   workgroup (0, row) takes the n = n_chunks * k candidates of row and writes the k best.
// Order: larger value first, ties by lower index; NaN is never chosen. Round r finds the best
// candidate ranked after round r-1's winner, so no candidate needs to be marked or stored.
#extension GL_GOOGLE_include_directive : require
#include "params.h"

layout(local_size_x_id = 0) in;
#include "workgroup_reduce.glsl"

layout(std430, binding = 0) readonly buffer Values { float values[]; };
#ifdef MERGE
layout(std430, binding = 1) readonly buffer Indices { uint indices[]; };
#define OUT_BINDING 2
#else
#define OUT_BINDING 1
#endif
layout(std430, binding = OUT_BINDING) writeonly buffer OutValues { float out_values[]; };
layout(std430, binding = OUT_BINDING + 1) writeonly buffer OutIndices { uint out_indices[]; };
layout(push_constant) uniform Push { TopKParams p; };

void main() {
    const uint row = gl_WorkGroupID.y, chunk_id = gl_WorkGroupID.x;
    const uint first = chunk_id * p.chunk, end = min(first + p.chunk, p.n);
    const uint out_base = (row * gl_NumWorkGroups.x + chunk_id) * p.k;
    const uint tid = gl_LocalInvocationID.x, threads = gl_WorkGroupSize.x;
    float previous_value = 1.0 / 0.0;
    uint previous_index = 0;
    bool first_round = true;
    for (uint round = 0; round < p.k; ++round) {
        float best_value = -1.0 / 0.0;
        uint best_index = 0xFFFFFFFFu;
        for (uint i = first + tid; i < end; i += threads) {
            const float value = values[row * p.n + i];
#ifdef MERGE
            const uint index = indices[row * p.n + i];
#else
            const uint index = i;
#endif
            const bool remaining = first_round || ranks_before(previous_value, previous_index, value, index);
            if (remaining && ranks_before(value, index, best_value, best_index)) {
                best_value = value;
                best_index = index;
            }
        }
        workgroup_best(best_value, best_index);
        if (tid == 0) {
            out_values[out_base + round] = best_value;
            out_indices[out_base + round] = best_index;
        }
        previous_value = best_value;
        previous_index = best_index;
        first_round = false;
    }
}
