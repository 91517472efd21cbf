#version 450
// Llama-4 attention temperature, in place (model-notes.md B.5): each row of x [n_tokens][row] is
// multiplied by 1 + beta * ln(1 + floor(pos / floor_length)). The floor is an integer division, so a
// position that is an exact multiple of floor_length steps up exactly there.
#extension GL_GOOGLE_include_directive : require
#include "params.h"
layout(local_size_x_id = 0) in;
#include "ops_common.glsl"


layout(std430, binding = 0) readonly buffer Positions { int positions[]; };
layout(std430, binding = 1) buffer X { float x[]; };
layout(push_constant) uniform Push { AttnTempParams p; };

void main() {
    const uint i = flat_invocation();
    if (i >= p.n_tokens * p.row) return;
    const uint periods = uint(max(positions[i / p.row], 0)) / p.floor_length;
    x[i] *= 1.0 + p.beta * log(float(periods + 1u));
}
