#version 450
// Elementwise ops, one pipeline each (model-notes.md C.0):
//   ADD     y = a + b[i % b_n]           (a residual, or a bias repeated over rows)
//   SCALE   y = x * factor
//   SOFTCAP y = factor * tanh(x / factor)  (final logit softcapping), tanh(u) = 1 - 2 / (e^2u + 1)
//   SWIGLU  y = silu(gate) * up          (shaders/glu.glsl)
//   GEGLU   y = gelu_tanh(gate) * up
//   SWIGLU_OAI y = swiglu_oai(gate, up) (MiniMax-M3)
// Each invocation handles 4 consecutive elements, with vec4 loads when the sizes allow. The output may
// alias an input.
#extension GL_GOOGLE_include_directive : require
#include "params.h"
layout(local_size_x_id = 0) in;
#include "ops_common.glsl"
#include "glu.glsl"


layout(std430, binding = 0) readonly buffer A { float a[]; };
layout(std430, binding = 0) readonly buffer A4 { vec4 a4[]; };
#if defined(SCALE) || defined(SOFTCAP)
#define Y_BINDING 1
#else
layout(std430, binding = 1) readonly buffer B { float b[]; };
layout(std430, binding = 1) readonly buffer B4 { vec4 b4[]; };
#define Y_BINDING 2
#endif
layout(std430, binding = Y_BINDING) writeonly buffer Y { float y[]; };
layout(std430, binding = Y_BINDING) writeonly buffer Y4 { vec4 y4[]; };
layout(push_constant) uniform Push { ElementwiseParams p; };

vec4 apply(vec4 first, vec4 second) {
#if defined(ADD)
    return first + second;
#elif defined(SCALE)
    return first * p.factor;
#elif defined(SOFTCAP)
    return p.factor * (1.0 - 2.0 / (exp(2.0 * first / p.factor) + 1.0));
#elif defined(SWIGLU)
    return swiglu(first, second);
#elif defined(GEGLU)
    return geglu(first, second);
#elif defined(SWIGLU_OAI)
    return swiglu_oai(first, second);
#endif
}

float second_operand(uint i) {
#if defined(ADD)
    return b[i % p.b_n];
#elif defined(SCALE) || defined(SOFTCAP)
    return 0.0;
#else
    return b[i];
#endif
}

void main() {
    const uint i4 = flat_invocation();
    if (4 * i4 >= p.n) return;
#if defined(ADD)
    const bool wide = (p.n & 3u) == 0u && (p.b_n & 3u) == 0u;
#else
    const bool wide = (p.n & 3u) == 0u;
#endif
    if (wide) {
#if defined(ADD)
        y4[i4] = apply(a4[i4], b4[i4 % (p.b_n / 4)]);
#elif defined(SCALE) || defined(SOFTCAP)
        y4[i4] = apply(a4[i4], vec4(0.0));
#else
        y4[i4] = apply(a4[i4], b4[i4]);
#endif
        return;
    }
    for (uint i = 4 * i4; i < min(4 * i4 + 4, p.n); ++i) y[i] = apply(vec4(a[i]), vec4(second_operand(i))).x;
}
