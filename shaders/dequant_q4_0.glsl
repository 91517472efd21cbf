// Q4_0: { half d; uint8 qs[16]; } (18 bytes), value = (nibble - 8) * d; low nibbles are elements
// 0..15, high nibbles 16..31 (model-notes.md A.4). One unit is the whole block.
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
const float NIBBLE_OFFSET = 8.0;
#else
const bool HAS_BIAS = true;
const float NIBBLE_OFFSET = 0.0;
#endif

uint weight_row_bytes(uint cols) { return cols / BLOCK_ELEMS * BLOCK_BYTES; }

// Run r of the block: elements 4r..4r+3 (runs 0-3 from the low nibbles of qs word r, 4-7 the high).
uint run_element(uint unit, uint run) { return 4 * run; }

void decode_unit(uint block_byte, uint unit, uint runs, out QVEC4 q[UNIT_RUNS], out vec2 scale_bias[SCALE_GROUPS]) {
    // The block's 5 words from its (2-byte aligned) start; d is the first half, qs follow.
    uint word = block_byte >> 2, shift = (block_byte & 2u) << 3;
    uint words[5];
    [[unroll]] for (uint i = 0; i < 5; ++i) words[i] = weight_word(word + i);
    [[unroll]] for (uint i = 0; i < 4; ++i) {
        const uint qs = word_after_half(words[i], words[i + 1], shift);
        q[i] = QVEC4(vec4(low_nibbles(qs)) - NIBBLE_OFFSET);
        q[i + 4] = QVEC4(vec4(high_nibbles(qs)) - NIBBLE_OFFSET);
    }
    const float d = leading_half(words[0], shift);
    scale_bias[0] = vec2(d, HAS_BIAS ? -8.0 * d : 0.0);
}
