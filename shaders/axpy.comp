#version 450
// y = a * x * multiplier + y. The foundation's test kernel: a specialization constant (multiplier),
// push constants, and an fp16-arithmetic variant (F16) with its fp32 fallback.
#extension GL_GOOGLE_include_directive : require
#ifdef F16
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#endif
#include "params.h"

layout(local_size_x_id = 0) in;
layout(constant_id = 3) const float multiplier = 1.0;

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) buffer Y { float y[]; };
layout(push_constant) uniform Push { AxpyParams p; };

void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i >= p.n) return;
#ifdef F16
    float16_t scaled = float16_t(p.a) * float16_t(x[i]) * float16_t(multiplier);
    y[i] = float(scaled + float16_t(y[i]));
#else
    y[i] = p.a * x[i] * multiplier + y[i];
#endif
}
