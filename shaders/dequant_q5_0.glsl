// Q5_0: { half d; uint8 qh[4]; uint8 qs[16]; } (22 bytes), value = (nibble | fifth bit << 4) - 16) * d;
// element j takes bit j of qh (little-endian uint32) (model-notes.md A.4). One unit is the whole block.
#include "dequant_common.glsl"

const bool DENSE = false;
const uint BLOCK_ELEMS = 32;
const uint BLOCK_BYTES = 22;
const uint SCALE_GROUPS = 1;
const bool HAS_BIAS = false;

uint weight_row_bytes(uint cols) { return cols / BLOCK_ELEMS * BLOCK_BYTES; }

// Run r of the block: elements 4r..4r+3 (runs 0-3 from the low nibbles of qs word r, 4-7 the high).
uint run_element(uint unit, uint run) { return 4 * run; }

// The four fifth bits of elements first..first+3, shifted into place.
uvec4 fifth_bits(uint qh, uint first) { return ((uvec4(qh) >> (uvec4(0, 1, 2, 3) + first)) & 1u) << 4; }

void decode_unit(uint block_byte, uint unit, uint runs, out QVEC4 q[UNIT_RUNS], out vec2 scale_bias[SCALE_GROUPS]) {
    uint qh = load_u32_even(block_byte + 2);
    uvec4 qs = load_u32x4_even(block_byte + 6);
    [[unroll]] for (uint i = 0; i < 4; ++i) {
        q[i] = QVEC4(ivec4(low_nibbles(qs[i]) | fifth_bits(qh, 4 * i)) - 16);
        q[i + 4] = QVEC4(ivec4(high_nibbles(qs[i]) | fifth_bits(qh, 16 + 4 * i)) - 16);
    }
    scale_bias[0] = vec2(load_half(block_byte), 0.0);
}

#ifdef SLICES
#define SLICE_LAYOUT_NIBBLE_HALVES
#include "dequant_slices.glsl"

void decode_slice(uint block_byte, uint part, uint runs, out vec4 q[SLICE_RUNS], out vec2 scale_bias[SLICE_GROUPS]) {
    five_bit_values(load_u32x2_even(block_byte + 6 + 8 * part), load_u32_even(block_byte + 2), part, q);
    scale_bias[0] = vec2(load_half(block_byte), 0.0);
}
#endif
