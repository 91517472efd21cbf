#version 450
// vkllm bench-ops: the device's arithmetic ceiling. Each invocation runs 8 independent chains, 4 steps
// per chain and iteration, and writes their sum so the work stays; the operands come from push
// constants so nothing folds. A step is a = a * m + c on vec4s (F16: f16vec4), or with INT8 on ints
// a = dot(a, m) + c, a and m read as packed vectors of 4 signed bytes and the add saturating; a being
// an operand keeps the dot product in the chain, where a compiler cannot hoist it out of the loop.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#ifdef INT8
#include "integer_dot.glsl"
#define ACCUMULATOR int
#define OPERAND uint
#define OPERAND_OF(value) floatBitsToUint(value)
ACCUMULATOR step(ACCUMULATOR a, OPERAND m, OPERAND c) { return dot4_i8(uint(a), m, int(c)); }
float total_of(ACCUMULATOR a) { return float(a); }
#else
#ifdef F16
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#define ACCUMULATOR f16vec4
#else
#define ACCUMULATOR vec4
#endif
#define OPERAND ACCUMULATOR
#define OPERAND_OF(value) OPERAND(value)
ACCUMULATOR step(ACCUMULATOR a, OPERAND m, OPERAND c) { return fma(a, m, c); }
float total_of(ACCUMULATOR a) { return dot(vec4(a), vec4(1.0)); }
#endif
#include "params.h"
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) writeonly buffer Sums { float sums[]; };
layout(push_constant) uniform Push { BenchFmaParams p; };

const uint CHAINS = 8, STEPS = 4;  // steps per invocation and iteration: CHAINS * STEPS

void main() {
    const OPERAND m = OPERAND_OF(p.multiplier), c = OPERAND_OF(p.addend);
    ACCUMULATOR a[CHAINS];
    [[unroll]] for (uint k = 0; k < CHAINS; ++k) a[k] = ACCUMULATOR(float(gl_GlobalInvocationID.x + k) * 1e-6);
    for (uint i = 0; i < p.iterations; ++i)
        [[unroll]] for (uint s = 0; s < STEPS; ++s)
            [[unroll]] for (uint k = 0; k < CHAINS; ++k) a[k] = step(a[k], m, c);
    ACCUMULATOR total = ACCUMULATOR(0.0);
    [[unroll]] for (uint k = 0; k < CHAINS; ++k) total += a[k];
    sums[gl_GlobalInvocationID.x] = total_of(total);
}
