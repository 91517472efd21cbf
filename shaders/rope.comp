#version 450
// RoPE in place (model-notes.md B): one invocation per rotated pair of one head of one token.
// Pairing from a spec constant: adjacent (x[2i], x[2i+1]) or NeoX (x[i], x[i + n_dims/2]); dims past
// n_dims are left as they are. The angle comes from shaders/rope_turn.glsl.
#extension GL_GOOGLE_include_directive : require
#include "params.h"
layout(local_size_x_id = 0) in;
#include "ops_common.glsl"
#include "rope_turn.glsl"

layout(constant_id = 3) const bool NEOX = false;

layout(std430, binding = 0) readonly buffer Phases { uvec2 phase_per_position[]; };  // (low, high) words
layout(std430, binding = 1) readonly buffer Positions { int positions[]; };
layout(std430, binding = 2) buffer X { float x[]; };
layout(push_constant) uniform Push { RopeParams p; };

void main() {
    const uint half_dims = p.n_dims / 2;
    const uint pair = flat_invocation();
    if (pair >= p.n_tokens * p.n_head * half_dims) return;
    const uint i = pair % half_dims, head = pair / half_dims % p.n_head, token = pair / half_dims / p.n_head;

    const vec2 cs = rope_cos_sin(uint(positions[token]), phase_per_position[i], p.mscale);
    const float c = cs.x, s = cs.y;

    const uint base = token * p.token_stride + head * p.head_dim;
    const uint i0 = base + (NEOX ? i : 2 * i), i1 = base + (NEOX ? i + half_dims : 2 * i + 1);
    const float a = x[i0], b = x[i1];
    x[i0] = a * c - b * s;
    x[i1] = a * s + b * c;
}
