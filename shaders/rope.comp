#version 450
// RoPE in place (model-notes.md B): one invocation per rotated pair of one head of one token.
// Pairing from a spec constant: adjacent (x[2i], x[2i+1]) or NeoX (x[i], x[i + n_dims/2]); dims past
// n_dims are left as they are.
//
// The angle pos * freq_i is taken modulo one turn in 64-bit fixed point: the host gives each pair
// frac(freq_i / 2pi) * 2^64 (YaRN mix, freq_scale and freq_factors folded in), and pos * that,
// wrapped to 64 bits, is the angle's fraction of a turn. An f32 angle would be off by pos * 2^-24
// radians, already 0.06 rad at position 10^6; this keeps the rotation exact at every position.
#extension GL_GOOGLE_include_directive : require
#include "params.h"
layout(local_size_x_id = 0) in;
#include "ops_common.glsl"

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

    // High word of pos * phase (mod 2^64): the turn fraction's top 32 bits, taken as signed so the
    // angle lands in [-pi, pi) where sin and cos are most accurate.
    const uint pos = uint(positions[token]);
    uint carry, low;
    umulExtended(pos, phase_per_position[i].x, carry, low);
    const int turn = int(carry + pos * phase_per_position[i].y);
    const float theta = float(turn) * (6.283185307179586 / 4294967296.0);
    const float c = cos(theta) * p.mscale, s = sin(theta) * p.mscale;

    const uint base = token * p.token_stride + head * p.head_dim;
    const uint i0 = base + (NEOX ? i : 2 * i), i1 = base + (NEOX ? i + half_dims : 2 * i + 1);
    const float a = x[i0], b = x[i1];
    x[i0] = a * c - b * s;
    x[i1] = a * s + b * c;
}
