#version 450
// LayerNorm of each row (ggml_norm, then * weight + bias; model-notes.md D.2):
// y = (x - mean) / sqrt(var + eps) * weight + bias, the variance taken about the mean (two sums).
// One workgroup per row. x and y may be the same buffer: each invocation reads its elements before
// writing them.
#extension GL_GOOGLE_include_directive : require
#include "params.h"
layout(local_size_x_id = 0) in;
#include "ops_common.glsl"
#include "workgroup_reduce.glsl"

layout(std430, binding = 0) readonly buffer Weight { float weight[]; };
layout(std430, binding = 1) readonly buffer Bias { float bias[]; };
layout(std430, binding = 2) readonly buffer X { float x[]; };
layout(std430, binding = 3) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { RmsNormParams p; };

void main() {
    const uint row = flat_workgroup();
    if (row >= p.n_rows) return;
    const uint tid = gl_LocalInvocationID.x, threads = gl_WorkGroupSize.x, base = row * p.n;
    float sum = 0.0;
    for (uint i = tid; i < p.n; i += threads) sum += x[base + i];
    const float mean = workgroup_sum(sum) / float(p.n);
    float sum_squares = 0.0;
    for (uint i = tid; i < p.n; i += threads) sum_squares += (x[base + i] - mean) * (x[base + i] - mean);
    const float inv_std = inversesqrt(workgroup_sum(sum_squares) / float(p.n) + p.eps);
    for (uint i = tid; i < p.n; i += threads) y[base + i] = (x[base + i] - mean) * inv_std * weight[i] + bias[i];
}
