#version 450
// Writes rows [n_tokens][row_size] (src_stride floats apart) into the KV-cache cells slots[t]
// (layout: runtime/ops/attention_config.h).
//   F16:  one invocation per pair of values, rounded to nearest even like llama.cpp's f16 cache.
//   Q8_0: one invocation per block of 32: d = amax / 127 stored as f16, q = round(x / d) half away
//         from zero (ggml quantize_row_q8_0). Two blocks' scales share a word, so scales are merged
//         in with atomics.
#extension GL_GOOGLE_include_directive : require
#include "params.h"
layout(local_size_x_id = 0) in;
#include "ops_common.glsl"
#include "half_rte.glsl"
#include "kv_quant.glsl"


layout(std430, binding = 0) readonly buffer Rows { float rows[]; };
layout(std430, binding = 1) readonly buffer Slots { int slots[]; };
layout(std430, binding = 2) buffer Cache { uint cache[]; };
layout(push_constant) uniform Push { KvWriteParams p; };

#ifdef KV_Q8_0
const uint BLOCK = 32;

void main() {
    const uint blocks_per_row = p.row_size / BLOCK;
    const uint block = flat_invocation();
    if (block >= p.n_tokens * blocks_per_row) return;
    const uint token = block / blocks_per_row, b = block % blocks_per_row;
    const uint slot = uint(slots[token]);
    if (slot >= p.n_cells) return;
    const uint src = token * p.src_stride + b * BLOCK;
    float amax = 0.0;
    for (uint i = 0; i < BLOCK; ++i) amax = max(amax, abs(rows[src + i]));
    const float d = amax / 127.0;
    const float inverse = d != 0.0 ? 1.0 / d : 0.0;
    const uint quant_word = (slot * p.row_size + b * BLOCK) / 4;
    for (uint w = 0; w < BLOCK / 4; ++w) {
        const vec4 v = vec4(rows[src + 4 * w], rows[src + 4 * w + 1], rows[src + 4 * w + 2], rows[src + 4 * w + 3]);
        cache[quant_word + w] = q8_0_pack4(v, inverse);
    }
    const uint scale_index = slot * blocks_per_row + b;
    const uint scale_word = p.n_cells * p.row_size / 4 + scale_index / 2, shift = 16 * (scale_index & 1u);
    atomicAnd(cache[scale_word], ~(0xFFFFu << shift));
    atomicOr(cache[scale_word], half_bits_rte(d) << shift);
}
#else
void main() {
    const uint pairs_per_row = p.row_size / 2;
    const uint pair = flat_invocation();
    if (pair >= p.n_tokens * pairs_per_row) return;
    const uint token = pair / pairs_per_row, w = pair % pairs_per_row;
    const uint slot = uint(slots[token]);
    if (slot >= p.n_cells) return;
    const uint src = token * p.src_stride + 2 * w;
    cache[slot * pairs_per_row + w] = half_bits_rte(rows[src]) | half_bits_rte(rows[src + 1]) << 16;
}
#endif
