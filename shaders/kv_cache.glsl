// Reads of a KV cache (layout: runtime/ops/attention_config.h) bound at K_BINDING and V_BINDING.
// The includer defines KV_F16 or KV_Q8_0. Elements are addressed as cell * row_size + offset in the
// row; loads take 4 consecutive values starting at a multiple of 4, or 8 from a multiple of 8 (one
// uvec4 of f16, one pair of q8_0 words). With TEXEL_READS the cache is
// bound as uniform texel buffers of uvec4 (gpu::Capabilities::texel_reads: faster on CPU devices).
#ifdef TEXEL_READS
#include "texel_reads.glsl"
layout(binding = K_BINDING) uniform utextureBuffer k_texels;
layout(binding = V_BINDING) uniform utextureBuffer v_texels;
uint k_word(uint word) { return texel_word(k_texels, word); }
uint v_word(uint word) { return texel_word(v_texels, word); }
uvec2 k_word2(uint pair) { return texel_pair(k_texels, pair); }
uvec2 v_word2(uint pair) { return texel_pair(v_texels, pair); }
uvec4 k_word4(uint quad) { return texelFetch(k_texels, int(quad)); }
uvec4 v_word4(uint quad) { return texelFetch(v_texels, int(quad)); }
#else
layout(std430, binding = K_BINDING) readonly buffer KWords { uint k_words[]; };
layout(std430, binding = K_BINDING) readonly buffer KWords2 { uvec2 k_words2[]; };
layout(std430, binding = V_BINDING) readonly buffer VWords { uint v_words[]; };
layout(std430, binding = V_BINDING) readonly buffer VWords2 { uvec2 v_words2[]; };
layout(std430, binding = K_BINDING) readonly buffer KWords4 { uvec4 k_words4[]; };
layout(std430, binding = V_BINDING) readonly buffer VWords4 { uvec4 v_words4[]; };
uint k_word(uint word) { return k_words[word]; }
uint v_word(uint word) { return v_words[word]; }
uvec2 k_word2(uint pair) { return k_words2[pair]; }
uvec2 v_word2(uint pair) { return v_words2[pair]; }
uvec4 k_word4(uint quad) { return k_words4[quad]; }
uvec4 v_word4(uint quad) { return v_words4[quad]; }
#endif

#ifdef KV_F16
vec4 k_load4(uint element, uint n_cells, uint row_size) {
    const uvec2 w = k_word2(element / 4);
    return vec4(unpackHalf2x16(w.x), unpackHalf2x16(w.y));
}
vec4 v_load4(uint element, uint n_cells, uint row_size) {
    const uvec2 w = v_word2(element / 4);
    return vec4(unpackHalf2x16(w.x), unpackHalf2x16(w.y));
}
mat2x4 halves8(uvec4 w) {
    return mat2x4(vec4(unpackHalf2x16(w.x), unpackHalf2x16(w.y)), vec4(unpackHalf2x16(w.z), unpackHalf2x16(w.w)));
}
mat2x4 k_load8(uint element, uint n_cells, uint row_size) { return halves8(k_word4(element / 8)); }
mat2x4 v_load8(uint element, uint n_cells, uint row_size) { return halves8(v_word4(element / 8)); }
#else
// Q8_0: int8 quants [n_cells * row_size], then one f16 scale per 32 of them.
float q8_scale(uint scale_index, uint word) { return unpackHalf2x16(word >> (16 * (scale_index & 1u))).x; }
vec4 q8_values(uint quants) { return vec4(ivec4(uvec4(quants) << uvec4(24, 16, 8, 0)) >> 24); }

vec4 k_load4(uint element, uint n_cells, uint row_size) {
    const uint scale_index = element / 32;
    const float d = q8_scale(scale_index, k_word(n_cells * row_size / 4 + scale_index / 2));
    return q8_values(k_word(element / 4)) * d;
}
vec4 v_load4(uint element, uint n_cells, uint row_size) {
    const uint scale_index = element / 32;
    const float d = q8_scale(scale_index, v_word(n_cells * row_size / 4 + scale_index / 2));
    return q8_values(v_word(element / 4)) * d;
}
mat2x4 k_load8(uint element, uint n_cells, uint row_size) {
    const uint scale_index = element / 32;
    const float d = q8_scale(scale_index, k_word(n_cells * row_size / 4 + scale_index / 2));
    const uvec2 quants = k_word2(element / 8);
    return mat2x4(q8_values(quants.x) * d, q8_values(quants.y) * d);
}
mat2x4 v_load8(uint element, uint n_cells, uint row_size) {
    const uint scale_index = element / 32;
    const float d = q8_scale(scale_index, v_word(n_cells * row_size / 4 + scale_index / 2));
    const uvec2 quants = v_word2(element / 8);
    return mat2x4(q8_values(quants.x) * d, q8_values(quants.y) * d);
}
#endif

// The attention logit of a raw q.k product (model-notes.md C.0): scaled, then soft-capped.
float attention_logit(float qk, float scale, float softcap) {
    const float s = qk * scale;
    // tanh(u) as 1 - 2 / (e^2u + 1): saturates to +-1 where sinh/cosh would overflow to inf/inf.
    return softcap != 0.0 ? softcap * (1.0 - 2.0 / (exp(2.0 * s / softcap) + 1.0)) : s;
}
