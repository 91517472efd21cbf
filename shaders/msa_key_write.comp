#version 450
// Writes index keys [n_tokens][row_size] (src_stride floats apart) into the f32 index-key cache cells
// slots[t] of MiniMax sparse attention (runtime/ops/sparse_attention.h): kept in f32, as llama.cpp
// does, so block selection does not move with f16 rounding. One invocation per value.
#extension GL_GOOGLE_include_directive : require
#include "params.h"
layout(local_size_x_id = 0) in;
#include "ops_common.glsl"

layout(std430, binding = 0) readonly buffer Rows { float rows[]; };
layout(std430, binding = 1) readonly buffer Slots { int slots[]; };
layout(std430, binding = 2) buffer Cache { float cache[]; };
layout(push_constant) uniform Push { KvWriteParams p; };

void main() {
    const uint i = flat_invocation();
    if (i >= p.n_tokens * p.row_size) return;
    const uint token = i / p.row_size, d = i % p.row_size;
    const uint slot = uint(slots[token]);
    if (slot >= p.n_cells) return;
    cache[slot * p.row_size + d] = rows[token * p.src_stride + d];
}
