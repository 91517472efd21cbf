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

const float QUANT_CENTRE = 16.0;

// A unit's quants as quads (runs 0-3 the low nibbles, 4-7 the high, each with its fifth bit) and its
// two sub-blocks' scale and bias for quants centred on QUANT_CENTRE.
void unit_quads(uint block_byte, uint unit, out uint quads[UNIT_RUNS], out vec2 scale_bias[SCALE_GROUPS]) {
    uint chunk = unit >> 1, half_offset = 16 * (unit & 1u);
    uvec4 header = weight_words4(block_byte >> 4);
    uvec4 qh = weight_words4((block_byte + 16 + half_offset) >> 4);
    uvec4 qs = weight_words4((block_byte + 48 + 32 * chunk + half_offset) >> 4);
    [[unroll]] for (uint i = 0; i < 4; ++i) {
        quads[i] = (qs[i] & 0x0F0F0F0Fu) | (((qh[i] >> (2 * chunk)) & 0x01010101u) << 4);
        quads[i + 4] = ((qs[i] >> 4) & 0x0F0F0F0Fu) | (((qh[i] >> (2 * chunk + 1)) & 0x01010101u) << 4);
    }
    k_chunk_scale_bias(header, chunk, QUANT_CENTRE, scale_bias);
}

#include "dequant_unit_quads.glsl"
