#version 450
// RMSNorm of each row: y = x / sqrt(mean(x^2) + eps), times weight with WEIGHT (model-notes.md C.0).
// One workgroup per row; vec4 loads when the row length allows. Per-head norms are rows of head_dim,
// read in place from each token's fused QKV row when the rows come in groups. x and y may be the
// same buffer: each invocation reads its elements before writing them.
#extension GL_GOOGLE_include_directive : require
#include "params.h"
layout(local_size_x_id = 0) in;
#include "ops_common.glsl"
#include "workgroup_reduce.glsl"


#ifdef WEIGHT
layout(std430, binding = 0) readonly buffer Weight { float weight[]; };
layout(std430, binding = 0) readonly buffer Weight4 { vec4 weight4[]; };
#define X_BINDING 1
#else
#define X_BINDING 0
#endif
layout(std430, binding = X_BINDING) readonly buffer X { float x[]; };
layout(std430, binding = X_BINDING) readonly buffer X4 { vec4 x4[]; };
layout(std430, binding = X_BINDING + 1) writeonly buffer Y { float y[]; };
layout(std430, binding = X_BINDING + 1) writeonly buffer Y4 { vec4 y4[]; };
layout(push_constant) uniform Push { RmsNormParams p; };

void main() {
    const uint row = flat_workgroup();
    if (row >= p.n_rows) return;
    const uint tid = gl_LocalInvocationID.x, threads = gl_WorkGroupSize.x;
    const uint start = p.rows_per_group == 0u ? row * p.n
                                              : row / p.rows_per_group * p.group_stride + row % p.rows_per_group * p.n;
    const bool wide = ((p.n | start) & 3u) == 0u;
    float sum_squares = 0.0;
    if (wide) {
        for (uint i = tid; i < p.n / 4; i += threads) {
            vec4 v = x4[start / 4 + i];
            sum_squares += dot(v, v);
        }
    } else {
        for (uint i = tid; i < p.n; i += threads) sum_squares += x[start + i] * x[start + i];
    }
    const float inv_rms = inversesqrt(workgroup_sum(sum_squares) / float(p.n) + p.eps);
    if (wide) {
        for (uint i = tid; i < p.n / 4; i += threads) {
#ifdef WEIGHT
            y4[start / 4 + i] = x4[start / 4 + i] * inv_rms * weight4[i];
#else
            y4[start / 4 + i] = x4[start / 4 + i] * inv_rms;
#endif
        }
    } else {
        for (uint i = tid; i < p.n; i += threads) {
#ifdef WEIGHT
            y[start + i] = x[start + i] * inv_rms * weight[i];
#else
            y[start + i] = x[start + i] * inv_rms;
#endif
        }
    }
}
