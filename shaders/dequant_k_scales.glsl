// The 6-bit sub-block scales and mins of Q4_K and Q5_K (ggml get_scale_min_k4), read from the
// block's first 16 bytes: word 0 holds d and dmin, words 1-3 the 12 packed scale bytes s[0..11].
// Sub-blocks 0-3 keep scale j in s[j] and min j in s[j + 4], 6 bits each; sub-blocks 4-7 keep their low
// 4 bits in the nibbles of s[j + 4] and their top 2 bits in the top bits of s[j - 4] and s[j]. Whole
// words assemble four sub-blocks' bytes at once, without picking bytes by a computed index.

// (d * scale, -dmin * min + centre * d * scale) of sub-blocks 2c and 2c + 1 (chunk c, 0..3), for quants
// decoded as q - centre (centred quants keep the dot products small, so less cancels against the bias
// term).
void k_chunk_scale_bias(uvec4 header, uint chunk, float centre, out vec2 scale_bias[2]) {
    const uint scales =
        chunk < 2u ? header.y & 0x3F3F3F3Fu : (header.w & 0x0F0F0F0Fu) | ((header.y >> 2) & 0x30303030u);
    const uint mins =
        chunk < 2u ? header.z & 0x3F3F3F3Fu : ((header.w >> 4) & 0x0F0F0F0Fu) | ((header.z >> 2) & 0x30303030u);
    const uint shift = 16u * (chunk & 1u);
    const vec2 d_dmin = unpackHalf2x16(header.x);
    [[unroll]] for (uint g = 0; g < 2; ++g) {
        const float d_scale = d_dmin.x * float((scales >> (shift + 8 * g)) & 0xFFu);
        scale_bias[g] = vec2(d_scale, fma(centre, d_scale, -d_dmin.y * float((mins >> (shift + 8 * g)) & 0xFFu)));
    }
}
