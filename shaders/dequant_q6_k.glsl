// Q6_K: { uint8 ql[128]; uint8 qh[64]; int8 scales[16]; half d; } (210 bytes, 2-byte aligned):
// value = d * scale * (q - 32) with q = 4 bits of ql | 2 bits of qh (model-notes.md A.4). Half n
// (128 elements) uses ql[64n..], qh[32n..], scales[8n..]; for l in 0..31 it holds elements
// l (ql[l] low, qh bits 0-1), l+32 (ql[l+32] low, bits 2-3), l+64 (ql[l] high, bits 4-5) and
// l+96 (ql[l+32] high, bits 6-7), with scale is = l/16 plus 0, 2, 4, 6.
// Unit u covers l = 8(u%4)..+7 of half u/4: all four quarters, so each ql and qh byte is read once.
#include "dequant_common.glsl"

const bool DENSE = false;
const uint BLOCK_ELEMS = 256;
const uint BLOCK_BYTES = 210;
const uint SCALE_GROUPS = 4;  // one per quarter: runs 2g and 2g+1
const bool HAS_BIAS = false;

uint weight_row_bytes(uint cols) { return cols / BLOCK_ELEMS * BLOCK_BYTES; }

uint run_element(uint unit, uint run) {
    return 128 * (unit >> 2) + 32 * (run >> 1) + 8 * (unit & 3u) + 4 * (run & 1u);
}

const float QUANT_CENTRE = 32.0;

// A unit's quants as quads (runs 2g, 2g + 1 from quarter g: 4 bits of ql and 2 of qh) and its four
// quarters' scales.
void unit_quads(uint block_byte, uint unit, out uint quads[UNIT_RUNS], out vec2 scale_bias[SCALE_GROUPS]) {
    uint half_index = unit >> 2, l0 = 8 * (unit & 3u);
    uvec2 ql_low = load_u32x2_even(block_byte + 64 * half_index + l0);
    uvec2 ql_high = load_u32x2_even(block_byte + 64 * half_index + 32 + l0);
    uvec2 qh = load_u32x2_even(block_byte + 128 + 32 * half_index + l0);
    uvec2 scales = load_u32x2_even(block_byte + 192 + 8 * half_index);
    [[unroll]] for (uint k = 0; k < 2; ++k) {
        quads[k] = (ql_low[k] & 0x0F0F0F0Fu) | ((qh[k] & 0x03030303u) << 4);
        quads[2 + k] = (ql_high[k] & 0x0F0F0F0Fu) | ((qh[k] & 0x0C0C0C0Cu) << 2);
        quads[4 + k] = ((ql_low[k] >> 4) & 0x0F0F0F0Fu) | (qh[k] & 0x30303030u);
        quads[6 + k] = ((ql_high[k] >> 4) & 0x0F0F0F0Fu) | ((qh[k] >> 2) & 0x30303030u);
    }
    float d = load_half(block_byte + 208);
    uint is = l0 >> 4;
    [[unroll]] for (uint g = 0; g < 4; ++g) {
        uint index = is + 2 * g;  // scale byte within this half's 8
        int scale = int(scales[index >> 2] << (24 - 8 * (index & 3u))) >> 24;
        scale_bias[g] = vec2(d * float(scale), 0.0);
    }
}

#include "dequant_unit_quads.glsl"
