#version 450
// MiniMax sparse attention, the indexer's block scores (model-notes.md C.6): block b's score for
// token t and index head g is the max over the block's cells j <= positions[t] of iq[t][g] . ik[j]
// (a raw f32 dot, no scale), or -inf when no cell of the block is visible. The local_blocks blocks
// ending with the token's own get llama.cpp's +1e30 bias, so the top-k always keeps them.
// Workgroup (b, t) scores one block for every index head (each key read serves them all); each
// invocation loops over block_size / local size cells, independent of the cache length. With
// p.seq_cells != 0 token t's cells start at cell t * seq_cells (a decode step over several sequences).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "params.h"
layout(local_size_x_id = 0) in;
#include "workgroup_reduce.glsl"

layout(constant_id = 1) const uint INDEX_DIM = 128;
layout(constant_id = 2) const uint INDEX_HEADS = 4;

layout(std430, binding = 0) readonly buffer Query { vec4 q4[]; };  // [n_tokens] rows of q_stride floats
layout(std430, binding = 1) readonly buffer Keys { vec4 k4[]; };   // [n_cells][INDEX_DIM]
layout(std430, binding = 2) readonly buffer Positions { int positions[]; };
layout(std430, binding = 3) writeonly buffer Scores { float scores[]; };  // [n_tokens][INDEX_HEADS][n_blocks]
layout(push_constant) uniform Push { MsaScoreParams p; };

shared vec4 q_tile[INDEX_HEADS * INDEX_DIM / 4];

void main() {
    const uint block = gl_WorkGroupID.x, token = gl_WorkGroupID.y, tid = gl_LocalInvocationID.x;
    const int pos = positions[token];
    const int first = int(block * p.block_size);
    const int last = min(min(pos, first + int(p.block_size) - 1), int(p.n_cells) - 1);
    const uint out_base = token * INDEX_HEADS * p.n_blocks + block;
    if (last < first) {  // uniform: the block lies past the token
        if (tid < INDEX_HEADS) scores[out_base + tid * p.n_blocks] = -1.0 / 0.0;
        return;
    }
    for (uint i = tid; i < INDEX_HEADS * INDEX_DIM / 4; i += gl_WorkGroupSize.x) q_tile[i] = q4[token * p.q_stride / 4 + i];
    barrier();

    float best[INDEX_HEADS];
    [[unroll]] for (uint g = 0; g < INDEX_HEADS; ++g) best[g] = -1.0 / 0.0;
    for (int cell = first + int(tid); cell <= last; cell += int(gl_WorkGroupSize.x)) {
        float dots[INDEX_HEADS];
        [[unroll]] for (uint g = 0; g < INDEX_HEADS; ++g) dots[g] = 0.0;
        for (uint d = 0; d < INDEX_DIM / 4; ++d) {
            const vec4 k = k4[(token * p.seq_cells + uint(cell)) * (INDEX_DIM / 4) + d];
            [[unroll]] for (uint g = 0; g < INDEX_HEADS; ++g) dots[g] += dot(q_tile[g * (INDEX_DIM / 4) + d], k);
        }
        [[unroll]] for (uint g = 0; g < INDEX_HEADS; ++g) best[g] = max(best[g], dots[g]);
    }
    const bool local = int(block) > pos / int(p.block_size) - int(p.local_blocks);
    [[unroll]] for (uint g = 0; g < INDEX_HEADS; ++g) {
        const float block_max = workgroup_max(best[g]);
        if (tid == 0) scores[out_base + g * p.n_blocks] = local ? block_max + 1e30 : block_max;
    }
}
