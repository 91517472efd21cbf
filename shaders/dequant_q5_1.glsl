// Q5_1: { half d; half m; uint8 qh[4]; uint8 qs[16]; } (24 bytes, 8-byte aligned),
// value = (nibble | fifth bit << 4) * d + m (model-notes.md A.4). One unit is the whole block.
// Decoded as (q - 16) * d + (m + 16d): centred quants keep the dot products small.
#include "dequant_common.glsl"

const bool DENSE = false;
const uint BLOCK_ELEMS = 32;
const uint BLOCK_BYTES = 24;
const uint SCALE_GROUPS = 1;
const bool HAS_BIAS = true;

uint weight_row_bytes(uint cols) { return cols / BLOCK_ELEMS * BLOCK_BYTES; }

// Run r of the block: elements 4r..4r+3 (runs 0-3 from the low nibbles of qs word r, 4-7 the high).
uint run_element(uint unit, uint run) { return 4 * run; }

// The four fifth bits of elements first..first+3, shifted into place.
uvec4 fifth_bits(uint qh, uint first) { return ((uvec4(qh) >> (uvec4(0, 1, 2, 3) + first)) & 1u) << 4; }

void decode_unit(uint block_byte, uint unit, uint runs, out QVEC4 q[UNIT_RUNS], out vec2 scale_bias[SCALE_GROUPS]) {
    uvec2 header = weight_words2(block_byte >> 3);
    uvec2 qs01 = weight_words2((block_byte >> 3) + 1), qs23 = weight_words2((block_byte >> 3) + 2);
    uvec4 qs = uvec4(qs01, qs23);
    [[unroll]] for (uint i = 0; i < 4; ++i) {
        q[i] = QVEC4(ivec4(low_nibbles(qs[i]) | fifth_bits(header.y, 4 * i)) - 16);
        q[i + 4] = QVEC4(ivec4(high_nibbles(qs[i]) | fifth_bits(header.y, 16 + 4 * i)) - 16);
    }
    vec2 d_m = unpackHalf2x16(header.x);
    scale_bias[0] = vec2(d_m.x, fma(16.0, d_m.x, d_m.y));
}

#ifdef SLICES
#define SLICE_LAYOUT_NIBBLE_HALVES
#include "dequant_slices.glsl"

// The header's two words and one 8-byte load of qs.
void decode_slice(uint block_byte, uint part, uint runs, out vec4 q[SLICE_RUNS], out vec2 scale_bias[SLICE_GROUPS]) {
    const uvec2 header = weight_words2(block_byte >> 3);
    five_bit_values(weight_words2((block_byte >> 3) + 1 + part), header.y, part, q);
    const vec2 d_m = unpackHalf2x16(header.x);
    scale_bias[0] = vec2(d_m.x, fma(16.0, d_m.x, d_m.y));
}
#endif
