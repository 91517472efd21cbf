// Q5_K: { half d; half dmin; uint8 scales[12]; uint8 qh[32]; uint8 qs[128]; } (176 bytes, 16-byte
// aligned): as Q4_K with a fifth bit; in chunk c, low-nibble element l takes bit 2c of qh[l] and
// high-nibble element l bit 2c+1 (model-notes.md A.4). Unit u covers half of chunk u/2.
#include "dequant_common.glsl"

const bool DENSE = false;
const uint BLOCK_ELEMS = 256;
const uint BLOCK_BYTES = 176;
const uint SCALE_GROUPS = 2;  // runs 0-3 (low nibbles), runs 4-7 (high nibbles)
const bool HAS_BIAS = true;

uint weight_row_bytes(uint cols) { return cols / BLOCK_ELEMS * BLOCK_BYTES; }

uint run_element(uint unit, uint run) {
    return 64 * (unit >> 1) + 16 * (unit & 1u) + 32 * (run >> 2) + 4 * (run & 3u);
}

#include "dequant_k_scales.glsl"

void decode_unit(uint block_byte, uint unit, uint runs, out QVEC4 q[UNIT_RUNS], out vec2 scale_bias[SCALE_GROUPS]) {
    uint chunk = unit >> 1, half_offset = 16 * (unit & 1u);
    uvec4 header = weight_words4(block_byte >> 4);
    uvec4 qh = weight_words4((block_byte + 16 + half_offset) >> 4);
    uvec4 qs = weight_words4((block_byte + 48 + 32 * chunk + half_offset) >> 4);
    [[unroll]] for (uint i = 0; i < 4; ++i) {
        q[i] = QVEC4(ivec4(low_nibbles(qs[i]) | (byte_bits(qh[i], 2 * chunk) << 4)) - 16);
        q[i + 4] = QVEC4(ivec4(high_nibbles(qs[i]) | (byte_bits(qh[i], 2 * chunk + 1) << 4)) - 16);
    }
    vec2 d_dmin = unpackHalf2x16(header.x);
    scale_bias[0] = k_scale_bias(header, 2 * chunk, d_dmin, 16.0);
    scale_bias[1] = k_scale_bias(header, 2 * chunk + 1, d_dmin, 16.0);
}
