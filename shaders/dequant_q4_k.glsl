// Q4_K: { half d; half dmin; uint8 scales[12]; uint8 qs[128]; } (144 bytes, 16-byte aligned):
// 8 sub-blocks of 32 with 6-bit scales and mins; value = d * sc * nibble - dmin * mn. Chunk c (64
// elements) takes qs[32c..32c+31]: low nibbles are elements 64c.., high nibbles 64c+32..
// (model-notes.md A.4). Unit u covers half of chunk u/2: 16 low and 16 high nibbles.
#include "dequant_common.glsl"

const bool DENSE = false;
const uint BLOCK_ELEMS = 256;
const uint BLOCK_BYTES = 144;
const uint SCALE_GROUPS = 2;  // runs 0-3 (low nibbles), runs 4-7 (high nibbles)
const bool HAS_BIAS = true;

uint weight_row_bytes(uint cols) { return cols / BLOCK_ELEMS * BLOCK_BYTES; }

uint run_element(uint unit, uint run) {
    return 64 * (unit >> 1) + 16 * (unit & 1u) + 32 * (run >> 2) + 4 * (run & 3u);
}

#include "dequant_k_scales.glsl"

const float QUANT_CENTRE = 8.0;

// A unit's quants as quads (runs 0-3 the low nibbles of its 16 bytes of qs, 4-7 the high) and its two
// sub-blocks' scale and bias for quants centred on QUANT_CENTRE.
void unit_quads(uint block_byte, uint unit, out uint quads[UNIT_RUNS], out vec2 scale_bias[SCALE_GROUPS]) {
    uint chunk = unit >> 1;
    uvec4 qs = weight_words4((block_byte + 16 + 32 * chunk + 16 * (unit & 1u)) >> 4);
    [[unroll]] for (uint i = 0; i < 4; ++i) {
        quads[i] = qs[i] & 0x0F0F0F0Fu;
        quads[i + 4] = (qs[i] >> 4) & 0x0F0F0F0Fu;
    }
    k_chunk_scale_bias(weight_words4(block_byte >> 4), chunk, QUANT_CENTRE, scale_bias);
}

#include "dequant_unit_quads.glsl"
