// The 6-bit sub-block scales and mins of Q4_K and Q5_K (ggml get_scale_min_k4), read from the
// block's first 16 bytes: word 0 holds d and dmin, words 1-3 the 12 packed scale bytes.

uint k_scale_byte(uvec4 header, uint index) { return (header[1 + (index >> 2)] >> (8 * (index & 3u))) & 0xFFu; }

// (d * scale, -dmin * min + centre * d * scale) of sub-block j (0..7), for quants decoded as
// q - centre (centred quants keep the dot products small, so less cancels against the bias term).
vec2 k_scale_bias(uvec4 header, uint j, vec2 d_dmin, float centre) {
    uint scale, min_;
    if (j < 4) {
        scale = k_scale_byte(header, j) & 63u;
        min_ = k_scale_byte(header, j + 4) & 63u;
    } else {
        scale = (k_scale_byte(header, j + 4) & 0xFu) | ((k_scale_byte(header, j - 4) >> 6) << 4);
        min_ = (k_scale_byte(header, j + 4) >> 4) | ((k_scale_byte(header, j) >> 6) << 4);
    }
    const float d_scale = d_dmin.x * float(scale);
    return vec2(d_scale, fma(centre, d_scale, -d_dmin.y * float(min_)));
}
