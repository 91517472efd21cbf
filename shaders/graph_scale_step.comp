#version 450
// y = x * step[slot] + offset: the render-graph tests' kernel. The multiplier comes from a buffer the
// host rewrites between replays, as positions and cache slots do in decode.
#extension GL_GOOGLE_include_directive : require
#include "params.h"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer Step { uint step[]; };
layout(std430, binding = 1) readonly buffer X { float x[]; };
layout(std430, binding = 2) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { GraphScaleParams p; };

void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i >= p.n) return;
    y[i] = x[i] * float(step[p.slot]) + p.offset;
}
