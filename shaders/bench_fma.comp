#version 450
// vkllm bench-ops: the device's arithmetic ceiling. Each invocation runs 8 independent vec4 chains of
// a = a * m + c (F16: f16vec4), 4 steps per chain and iteration, and writes their sum so the work
// stays; m and c come from push constants so nothing folds.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#ifdef F16
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#define VEC4 f16vec4
#else
#define VEC4 vec4
#endif
#include "params.h"
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) writeonly buffer Sums { float sums[]; };
layout(push_constant) uniform Push { BenchFmaParams p; };

const uint CHAINS = 8, STEPS = 4;  // FMAs per invocation and iteration: CHAINS * STEPS * 4

void main() {
    const VEC4 m = VEC4(p.multiplier), c = VEC4(p.addend);
    VEC4 a[CHAINS];
    [[unroll]] for (uint k = 0; k < CHAINS; ++k) a[k] = VEC4(float(gl_GlobalInvocationID.x + k) * 1e-6);
    for (uint i = 0; i < p.iterations; ++i)
        [[unroll]] for (uint s = 0; s < STEPS; ++s)
            [[unroll]] for (uint k = 0; k < CHAINS; ++k) a[k] = fma(a[k], m, c);
    VEC4 total = VEC4(0.0);
    [[unroll]] for (uint k = 0; k < CHAINS; ++k) total += a[k];
    sums[gl_GlobalInvocationID.x] = float(dot(vec4(total), vec4(1.0)));
}
