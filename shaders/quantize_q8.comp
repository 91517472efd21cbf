#version 450
// x in int8 blocks for matmul_q8.comp (ops/matmul.h): each 32 consecutive floats become 9 words, the
// scale and the 32 values round(x / d) as 8 words of 4 signed bytes, lowest first. ggml's Q8_0 rule,
// as llama.cpp quantizes activations: d = max |x| / 127, the values rounded with 1 / d, and d kept
// as its nearest fp16 (stored here as the f32 of that value). One invocation per block.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "params.h"
#include "half_rte.glsl"
layout(local_size_x_id = 0) in;
#include "ops_common.glsl"

layout(std430, binding = 0) readonly buffer Input { vec4 x4[]; };
layout(std430, binding = 1) writeonly buffer Output { uint xq[]; };
layout(push_constant) uniform Push { QuantizeQ8Params p; };

void main() {
    const uint block = flat_invocation();
    if (block >= p.blocks) return;
    vec4 x[8];
    float amax = 0.0;
    [[unroll]] for (uint i = 0; i < 8; ++i) {
        x[i] = x4[block * 8 + i];
        const vec4 a = abs(x[i]);
        amax = max(amax, max(max(a.x, a.y), max(a.z, a.w)));
    }
    const float d = amax / 127.0;
    const float inverse = d != 0.0 ? 1.0 / d : 0.0;
    xq[block * 9] = floatBitsToUint(unpackHalf2x16(half_bits_rte(d)).x);
    [[unroll]] for (uint i = 0; i < 8; ++i) {
        // Halves away from zero, as C's roundf; clamped against an inverse a little too large.
        const vec4 v = x[i] * inverse;
        const ivec4 q = clamp(ivec4(sign(v) * floor(abs(v) + 0.5)), -127, 127);
        const uvec4 bytes = uvec4(q) & 0xFFu;
        xq[block * 9 + 1 + i] = bytes.x | (bytes.y << 8) | (bytes.z << 16) | (bytes.w << 24);
    }
}
