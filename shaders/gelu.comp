#version 450
// y = gelu_tanh(x) = 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3), written as x / (1 + e^(-2u))
// so that no inf/inf arises: the vision encoders' MLPs and the Pixtral projector (model-notes.md D).
// One invocation per 4 elements; y may alias x.
#extension GL_GOOGLE_include_directive : require
#include "params.h"
layout(local_size_x_id = 0) in;
#include "ops_common.glsl"

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { ElementwiseParams p; };

void main() {
    const uint i4 = flat_invocation();
    for (uint i = 4 * i4; i < min(4 * i4 + 4, p.n); ++i) {
        const float z = x[i], u = 0.7978845608028654 * (z + 0.044715 * z * z * z);
        y[i] = z / (1.0 + exp(-2.0 * u));
    }
}
