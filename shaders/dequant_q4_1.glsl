// Q4_1: { half d; half m; uint8 qs[16]; } (20 bytes, 4-byte aligned), value = nibble * d + m
// (model-notes.md A.4). One unit is the whole block. Decoded as (nibble - 8) * d + (m + 8d): centred
// quants keep the dot products small, so less cancels against the bias term.
#include "dequant_common.glsl"

const bool DENSE = false;
const uint BLOCK_ELEMS = 32;
const uint BLOCK_BYTES = 20;
const uint SCALE_GROUPS = 1;
const bool HAS_BIAS = true;

uint weight_row_bytes(uint cols) { return cols / BLOCK_ELEMS * BLOCK_BYTES; }

// Run r of the block: elements 4r..4r+3 (runs 0-3 from the low nibbles of qs word r, 4-7 the high).
uint run_element(uint unit, uint run) { return 4 * run; }

void decode_unit(uint block_byte, uint unit, uint runs, out QVEC4 q[UNIT_RUNS], out vec2 scale_bias[SCALE_GROUPS]) {
    uint word = block_byte >> 2;
    [[unroll]] for (uint i = 0; i < 4; ++i) {
        uint qs = weight_word(word + 1 + i);
        q[i] = QVEC4(ivec4(low_nibbles(qs)) - 8);
        q[i + 4] = QVEC4(ivec4(high_nibbles(qs)) - 8);
    }
    vec2 d_m = unpackHalf2x16(weight_word(word));
    scale_bias[0] = vec2(d_m.x, fma(8.0, d_m.x, d_m.y));
}

#ifdef SLICES
#define SLICE_LAYOUT_NIBBLE_HALVES
#include "dequant_slices.glsl"

void decode_slice(uint block_byte, uint part, uint runs, out vec4 q[SLICE_RUNS], out vec2 scale_bias[SLICE_GROUPS]) {
    const uint word = block_byte >> 2;
    nibble_values(uvec2(weight_word(word + 1 + 2 * part), weight_word(word + 2 + 2 * part)), 8.0, q);
    const vec2 d_m = unpackHalf2x16(weight_word(word));
    scale_bias[0] = vec2(d_m.x, fma(8.0, d_m.x, d_m.y));
}
#endif
