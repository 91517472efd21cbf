// Q8_0: { half d; int8 qs[32]; } (34 bytes), value = qs * d (model-notes.md A.4). One unit is the
// whole block.
#include "dequant_common.glsl"

const bool DENSE = false;
const uint BLOCK_ELEMS = 32;
const uint BLOCK_BYTES = 34;
const uint SCALE_GROUPS = 1;
const bool HAS_BIAS = false;

uint weight_row_bytes(uint cols) { return cols / BLOCK_ELEMS * BLOCK_BYTES; }

// Run r of the block: elements 4r..4r+3 (qs word r).
uint run_element(uint unit, uint run) { return 4 * run; }

void decode_unit(uint block_byte, uint unit, uint runs, out QVEC4 q[UNIT_RUNS], out vec2 scale_bias[SCALE_GROUPS]) {
    uint qs[8];
    scale_bias[0] = vec2(half_led_block(block_byte, 8, qs), 0.0);
    [[unroll]] for (uint i = 0; i < 8; ++i) q[i] = QVEC4(signed_bytes_of(qs[i]));
}

// The block as 8 words of 4 signed bytes for integer dot products (matmul_q8.comp): word i holds
// elements 4i..4i+3, as stored.
void decode_block_i8(uint block_byte, out uint quads[8], out float d) { d = half_led_block(block_byte, 8, quads); }

#ifdef SLICES
const uint SLICE_ELEMS = 16;  // qs bytes 16h..16h+15 of part h
#include "dequant_slices.glsl"

// The signed bytes offset by 128 (their top bit flipped) to be read as unsigned quads.
void decode_slice(uint block_byte, uint part, uint runs, out vec4 q[SLICE_RUNS], out vec2 scale_bias[SLICE_GROUPS]) {
    const uvec4 qs = load_u32x4_even(block_byte + 2 + 16 * part);
    [[unroll]] for (uint k = 0; k < 4; ++k) q[k] = quad_values(qs[k] ^ 0x80808080u, ~0u, 128.0);
    scale_bias[0] = vec2(load_half(block_byte), 0.0);
}
#endif
