// Q4_0: { half d; uint8 qs[16]; } (18 bytes), value = (nibble - 8) * d; low nibbles are elements
// 0..15, high nibbles 16..31 (model-notes.md A.4). One unit is the whole block.
// fp32: each nibble is masked in place (times 2^0, 2^4, ... 2^24; the top one shifted down) and
// converted, run_scale undoing the power of two on x: two operations a nibble instead of three.
#ifndef F16
#define RUN_SCALES
#endif
#include "dequant_common.glsl"

const bool DENSE = false;
const uint BLOCK_ELEMS = 32;
const uint BLOCK_BYTES = 18;
const uint SCALE_GROUPS = 1;
// fp32: value = nibble * d - 8 d, the offset through the bias, once per unit rather than per value.
// fp16: the nibbles centred (-8..7) instead, so each 4-term fp16 dot stays small and its rounding is
// not magnified by the bias cancelling most of it.
#ifdef F16
const bool HAS_BIAS = false;
#else
const bool HAS_BIAS = true;
#endif

uint weight_row_bytes(uint cols) { return cols / BLOCK_ELEMS * BLOCK_BYTES; }

#ifdef RUN_SCALES
vec4 run_scale(uint run) {
    return run < 4 ? vec4(1.0, 1.0 / 256.0, 1.0 / 65536.0, 1.0 / 16777216.0)
                   : vec4(1.0 / 16.0, 1.0 / 4096.0, 1.0 / 1048576.0, 1.0);
}
#endif

// Run r of the block: elements 4r..4r+3 (runs 0-3 from the low nibbles of qs word r, 4-7 the high).
uint run_element(uint unit, uint run) { return 4 * run; }

void decode_unit(uint block_byte, uint unit, uint runs, out QVEC4 q[UNIT_RUNS], out vec2 scale_bias[SCALE_GROUPS]) {
    uint qs[8];
    const float d = half_led_block(block_byte, 4, qs);
    [[unroll]] for (uint i = 0; i < 4; ++i) {
#ifdef F16
        q[i] = QVEC4(vec4(low_nibbles(qs[i])) - 8.0);
        q[i + 4] = QVEC4(vec4(high_nibbles(qs[i])) - 8.0);
#else
        // Below 2^28, so the signed conversion (one instruction on every CPU) is exact.
        q[i] = vec4(ivec4(uvec4(qs[i]) & uvec4(0xFu, 0xF00u, 0xF0000u, 0xF000000u)));
        q[i + 4] = vec4(ivec4(uvec4(qs[i] & 0xF0u, qs[i] & 0xF000u, qs[i] & 0xF00000u, qs[i] >> 28)));
#endif
    }
    scale_bias[0] = vec2(d, HAS_BIAS ? -8.0 * d : 0.0);
}

// The block as 8 words of 4 signed bytes for integer dot products (matmul_q8.comp): word i holds
// elements 4i..4i+3, each nibble centred (n + 0x78 cannot carry into the next byte; flipping its top
// bit gives n - 8 in two's complement).
void decode_block_i8(uint block_byte, out uint quads[8], out float d) {
    uint qs[8];
    d = half_led_block(block_byte, 4, qs);
    [[unroll]] for (uint i = 0; i < 4; ++i) {
        quads[i] = ((qs[i] & 0x0F0F0F0Fu) + 0x78787878u) ^ 0x80808080u;
        quads[i + 4] = (((qs[i] >> 4) & 0x0F0F0F0Fu) + 0x78787878u) ^ 0x80808080u;
    }
}

#ifdef SLICES
#define SLICE_LAYOUT_NIBBLE_HALVES
#include "dequant_slices.glsl"

// Nibbles centred as decode_unit's are (fp32: the offset through the bias).
void decode_slice(uint block_byte, uint part, uint runs, out vec4 q[SLICE_RUNS], out vec2 scale_bias[SLICE_GROUPS]) {
    const float centre = HAS_BIAS ? 0.0 : 8.0, d = load_half(block_byte);
    nibble_values(load_u32x2_even(block_byte + 2 + 8 * part), centre, q);
    scale_bias[0] = vec2(d, HAS_BIAS ? -8.0 * d : 0.0);
}
#endif
