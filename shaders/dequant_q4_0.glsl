// Q4_0: { half d; uint8 qs[16]; } (18 bytes), value = (nibble - 8) * d; low nibbles are elements
// 0..15, high nibbles 16..31 (model-notes.md A.4). One unit is the whole block.
#include "dequant_common.glsl"

const bool DENSE = false;
const uint BLOCK_ELEMS = 32;
const uint BLOCK_BYTES = 18;
const uint SCALE_GROUPS = 1;
const bool HAS_BIAS = false;

uint weight_row_bytes(uint cols) { return cols / BLOCK_ELEMS * BLOCK_BYTES; }

// Run r of the block: elements 4r..4r+3 (runs 0-3 from the low nibbles of qs word r, 4-7 the high).
uint run_element(uint unit, uint run) { return 4 * run; }

void decode_unit(uint block_byte, uint unit, uint runs, out QVEC4 q[UNIT_RUNS], out vec2 scale_bias[SCALE_GROUPS]) {
    uvec4 qs = load_u32x4_even(block_byte + 2);
    [[unroll]] for (uint i = 0; i < 4; ++i) {
        q[i] = QVEC4(ivec4(low_nibbles(qs[i])) - 8);
        q[i + 4] = QVEC4(ivec4(high_nibbles(qs[i])) - 8);
    }
    scale_bias[0] = vec2(load_half(block_byte), 0.0);
}
