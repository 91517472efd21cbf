#version 450
// The entries (token * n_expert_used + slot) of each expert's tokens in a chunk, in token order: one
// workgroup per expert compacts the ids that name it, a workgroup-wide chunk of entries at a time
// (positions from subgroup ballots, then per-subgroup offsets through shared memory). An expert's
// list holds at most n_tokens entries (a token selects an expert once).
#extension GL_GOOGLE_include_directive : require
#include "params.h"

layout(local_size_x_id = 0) in;
#include "subgroup_ops.glsl"

layout(std430, binding = 0) readonly buffer Ids { uint ids[]; };
layout(std430, binding = 1) writeonly buffer Counts { uint counts[]; };
layout(std430, binding = 2) writeonly buffer Entries { uint entries[]; };
layout(push_constant) uniform Push { MoeGroupParams p; };

const uint MAX_SUBGROUPS = 128;  // 1024 invocations in subgroups of 8
shared uint subgroup_counts[MAX_SUBGROUPS];

void main() {
    const uint expert = gl_WorkGroupID.x, tid = gl_LocalInvocationID.x, threads = gl_WorkGroupSize.x;
    const uint total = p.n_tokens * p.n_expert_used;
    uint found = 0;
    for (uint base = 0; base < total; base += threads) {
        const uint entry = base + tid;
        const bool match = entry < total && ids[entry] == expert;
        const uvec4 ballot = subgroupBallot(match);
        if (subgroupElect()) subgroup_counts[gl_SubgroupID] = subgroupBallotBitCount(ballot);
        barrier();
        uint offset = found, chunk = 0;
        for (uint s = 0; s < gl_NumSubgroups; ++s) {
            if (s < gl_SubgroupID) offset += subgroup_counts[s];
            chunk += subgroup_counts[s];
        }
        offset += subgroupBallotExclusiveBitCount(ballot);
        if (match && offset < p.n_tokens) entries[expert * p.n_tokens + offset] = entry;
        found += chunk;
        barrier();
    }
    if (tid == 0u) counts[expert] = min(found, p.n_tokens);
}
