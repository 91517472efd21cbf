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
    // The block's 17 words from its (2-byte aligned) start; d is the first half, qs follow.
    uint word = block_byte >> 2, shift = (block_byte & 2u) << 3;
    uint words[9];
    weight_words_at(word, 9, words);
    [[unroll]] for (uint i = 0; i < 8; ++i) q[i] = QVEC4(signed_bytes_of(word_after_half(words[i], words[i + 1], shift)));
    scale_bias[0] = vec2(leading_half(words[0], shift), 0.0);
}

// The block as 8 words of 4 signed bytes for integer dot products (matmul_q8.comp): word i holds
// elements 4i..4i+3, as stored.
void decode_block_i8(uint block_byte, out uint quads[8], out float d) {
    uint word = block_byte >> 2, shift = (block_byte & 2u) << 3;
    uint words[9];
    weight_words_at(word, 9, words);
    [[unroll]] for (uint i = 0; i < 8; ++i) quads[i] = word_after_half(words[i], words[i + 1], shift);
    d = leading_half(words[0], shift);
}
