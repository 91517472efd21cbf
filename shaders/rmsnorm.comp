#version 450
// RMSNorm of each row: y = x / sqrt(mean(x^2) + eps), times weight with WEIGHT (model-notes.md C.0).
// One workgroup per row; vec4 loads when the row length allows. Per-head norms are rows of head_dim,
// read in place from each token's fused QKV row when the rows come in groups; TWO_WEIGHTS gives a
// group's first rows one weight and the rest another (q heads and k heads in one pass). x and y may
// be the same buffer: each invocation reads its elements before writing them. ACCUMULATE adds the
// result to y instead (a post-norm and its residual add in one pass; then y is not x).
#extension GL_GOOGLE_include_directive : require
#include "params.h"
layout(local_size_x_id = 0) in;
#include "ops_common.glsl"
#include "workgroup_reduce.glsl"


#if defined(TWO_WEIGHTS) || defined(WEIGHT)
layout(std430, binding = 0) readonly buffer Weight { float weights_first[]; };
layout(std430, binding = 0) readonly buffer Weight4 { vec4 weights_first4[]; };
#endif
#if defined(TWO_WEIGHTS)
layout(std430, binding = 1) readonly buffer WeightRest { float weights_rest[]; };
layout(std430, binding = 1) readonly buffer WeightRest4 { vec4 weights_rest4[]; };
#define X_BINDING 2
#elif defined(WEIGHT)
#define X_BINDING 1
#else
#define X_BINDING 0
#endif
layout(std430, binding = X_BINDING) readonly buffer X { float x[]; };
layout(std430, binding = X_BINDING) readonly buffer X4 { vec4 x4[]; };
#ifdef ACCUMULATE
layout(std430, binding = X_BINDING + 1) buffer Y { float y[]; };
layout(std430, binding = X_BINDING + 1) buffer Y4 { vec4 y4[]; };
#else
layout(std430, binding = X_BINDING + 1) writeonly buffer Y { float y[]; };
layout(std430, binding = X_BINDING + 1) writeonly buffer Y4 { vec4 y4[]; };
#endif
layout(push_constant) uniform Push { RmsNormParams p; };

// Elements i (i4: 4 i4 .. 4 i4 + 3) of the row's weight (1 without one).
bool rest_weight(uint row) { return p.rows_per_group != 0u && row % p.rows_per_group >= p.first_weight_rows; }
float weight_at(uint row, uint i) {
#if defined(TWO_WEIGHTS)
    return rest_weight(row) ? weights_rest[i] : weights_first[i];
#elif defined(WEIGHT)
    return weights_first[i];
#else
    return 1.0;
#endif
}
vec4 weight4_at(uint row, uint i4) {
#if defined(TWO_WEIGHTS)
    return rest_weight(row) ? weights_rest4[i4] : weights_first4[i4];
#elif defined(WEIGHT)
    return weights_first4[i4];
#else
    return vec4(1.0);
#endif
}

void store(uint i, float value) {
#ifdef ACCUMULATE
    value += y[i];
#endif
    y[i] = value;
}
void store4(uint i4, vec4 value) {
#ifdef ACCUMULATE
    value += y4[i4];
#endif
    y4[i4] = value;
}

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
        for (uint i = tid; i < p.n / 4; i += threads) store4(start / 4 + i, x4[start / 4 + i] * inv_rms * weight4_at(row, i));
    } else {
        for (uint i = tid; i < p.n; i += threads) store(start + i, x[start + i] * inv_rms * weight_at(row, i));
    }
}
