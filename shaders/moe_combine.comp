#version 450
// x[t][i] += (sum over slots s in order of weights[t][s] * y[t][s][i]) + shared[t][i], the order of
// llama.cpp's build_moe_ffn (weighted experts added one by one, then the shared expert, then the
// residual). One invocation per element; workgroup y is the token.
#extension GL_GOOGLE_include_directive : require
#include "params.h"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer Outputs { float y[]; };
layout(std430, binding = 1) readonly buffer Weights { float weights[]; };
layout(std430, binding = 2) readonly buffer Shared { float shared_out[]; };  // read only with has_shared
layout(std430, binding = 3) buffer Residual { float x[]; };
layout(push_constant) uniform Push { MoeCombineParams p; };

void main() {
    const uint i = gl_GlobalInvocationID.x, token = gl_WorkGroupID.y;
    if (i >= p.n) return;
    const uint first = token * p.n_expert_used;
    // precise: each product rounded before its sum, as separate ggml ops round them.
    precise float sum = weights[first] * y[first * p.n + i];
    for (uint s = 1; s < p.n_expert_used; ++s) {
        precise float term = weights[first + s] * y[(first + s) * p.n + i];
        sum = sum + term;
    }
    if (p.has_shared != 0u) sum = sum + shared_out[token * p.n + i];
    x[token * p.n + i] = sum + x[token * p.n + i];
}
