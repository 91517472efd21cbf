#version 450
// Softmax of each row of x * scale (the row maximum subtracted first), one workgroup per row.
// x and y may be the same buffer: each invocation only rewrites the elements it read.
#extension GL_GOOGLE_include_directive : require
#include "params.h"
layout(local_size_x_id = 0) in;
#include "ops_common.glsl"
#include "workgroup_reduce.glsl"


layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { SoftmaxParams p; };

void main() {
    const uint row = flat_workgroup();
    if (row >= p.n_rows) return;
    const uint tid = gl_LocalInvocationID.x, threads = gl_WorkGroupSize.x, base = row * p.n;
    float local_max = -1.0 / 0.0;
    for (uint i = tid; i < p.n; i += threads) local_max = max(local_max, x[base + i] * p.scale);
    const float row_max = workgroup_max(local_max);
    float local_sum = 0.0;
    for (uint i = tid; i < p.n; i += threads) local_sum += exp(x[base + i] * p.scale - row_max);
    const float inv_sum = 1.0 / workgroup_sum(local_sum);
    for (uint i = tid; i < p.n; i += threads) y[base + i] = exp(x[base + i] * p.scale - row_max) * inv_sum;
}
