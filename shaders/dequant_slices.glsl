// Slices, the pieces matvec's lanes decode on GPUs (SLICES defined; matvec_body.glsl): about 16 bytes of
// quants, read as wide aligned words where the layout allows, so that a subgroup's lanes read
// consecutive bytes of a row and each lane's x values lie close to its neighbours'. Included once by
// each dequant_<type>.glsl, which picks a layout first:
//   SLICE_LAYOUT_UNITS          a slice is a unit (Q4_K, Q5_K, Q6_K: dequant_unit_quads.glsl)
//   SLICE_LAYOUT_NIBBLE_HALVES  half a 32-element nibble block (Q4_0, Q4_1, Q5_0, Q5_1): part h takes qs
//                               bytes 8h..8h+7, whose low nibbles are elements 8h..8h+7 (runs 0, 1) and
//                               high nibbles 16 + 8h.. (runs 2, 3)
//   otherwise                   SLICE_ELEMS consecutive elements (F32, F16, BF16: 8; Q8_0: 16)
// and then defines (F16 and BF16: SLICE_PAIR_VALUES does)
//   decode_slice(block_byte, part, runs, q, scale_bias)
// giving the slice's values exactly in fp32 as decode_unit gives a unit's (value = q * scale_bias[g].x +
// scale_bias[g].y, groups of SLICE_RUNS / SLICE_GROUPS consecutive runs; the bias where HAS_BIAS).
// slice_first(part) + slice_run(run) is the first element of run `run` of slice `part` of a block, so a
// lane's x loads are one index plus constants.

#if defined(SLICE_LAYOUT_UNITS)
const uint SLICE_ELEMS = UNIT_ELEMS;
const uint SLICE_GROUPS = SCALE_GROUPS;
uint slice_first(uint part) { return run_element(part, 0); }
uint slice_run(uint run) { return run_element(0, run); }
#elif defined(SLICE_LAYOUT_NIBBLE_HALVES)
const uint SLICE_ELEMS = 16;
const uint SLICE_GROUPS = 1;
uint slice_first(uint part) { return 8 * part; }
uint slice_run(uint run) { return 16 * (run >> 1) + 4 * (run & 1u); }
#else
const uint SLICE_GROUPS = 1;
uint slice_first(uint part) { return SLICE_ELEMS * part; }
uint slice_run(uint run) { return 4 * run; }
#endif
const uint SLICE_RUNS = SLICE_ELEMS / 4;

// Whether every row starts 16-byte aligned (specialized by the host from the row length): F16 and BF16
// slices are then one 16-byte load.
layout(constant_id = 8) const bool ALIGNED_ROWS = false;

#ifdef SLICE_PAIR_VALUES
// F16 and BF16 (SLICE_PAIR_VALUES: the function of a word's two values): the slice's 16 bytes in one load
// where rows are 16-byte aligned, else in two 8-byte ones (the second only for a whole slice).
void decode_slice(uint block_byte, uint part, uint runs, out vec4 q[SLICE_RUNS], out vec2 scale_bias[SLICE_GROUPS]) {
    const uint byte_offset = block_byte + 16 * part;
    uvec4 words = uvec4(0);
    if (ALIGNED_ROWS) {
        words = weight_words4(byte_offset >> 4);
    } else {
        words.xy = weight_words2(byte_offset >> 3);
        if (runs == SLICE_RUNS) words.zw = weight_words2((byte_offset >> 3) + 1);
    }
    q[0] = vec4(SLICE_PAIR_VALUES(words.x), SLICE_PAIR_VALUES(words.y));
    q[1] = vec4(SLICE_PAIR_VALUES(words.z), SLICE_PAIR_VALUES(words.w));
    scale_bias[0] = vec2(1.0, 0.0);
}
#endif

// The four unsigned bytes of `word & mask` (element 4k first; mask a constant, 0x0F0F0F0F for the
// nibbles of a word, ~0u for assembled quads) less `offset` (a constant), exactly. fp16: each byte or'ed
// under the exponent of 1024 is 1024 + q, two halves to a word, and one packed subtraction takes
// 1024 + offset off both: no integer-to-float conversion (a quarter-rate instruction on NVIDIA). The
// mask is applied inside, so that it folds into the halves' own masks.
vec4 quad_values(uint word, const uint mask, const float offset) {
#ifdef F16
    f16vec2 magic = f16vec2(float16_t(1024.0 + offset));
    f16vec2 even = unpackFloat2x16((word & (mask & 0x00FF00FFu)) | 0x64006400u) - magic;               // elements 0, 2
    f16vec2 odd = unpackFloat2x16(((word >> 8) & ((mask >> 8) & 0x00FF00FFu)) | 0x64006400u) - magic;  // elements 1, 3
    return vec4(even.x, odd.x, even.y, odd.y);
#else
    return vec4(bytes_of(word & mask)) - offset;
#endif
}

#ifdef SLICE_LAYOUT_NIBBLE_HALVES
// A slice's values from its two words of qs, nibbles centred on `centre` (Q4_0, Q4_1).
void nibble_values(uvec2 qs, const float centre, out vec4 q[SLICE_RUNS]) {
    [[unroll]] for (uint k = 0; k < 2; ++k) {
        q[k] = quad_values(qs[k], 0x0F0F0F0Fu, centre);
        q[2 + k] = quad_values(qs[k] >> 4, 0x0F0F0F0Fu, centre);
    }
}

// The same with each nibble's fifth bit from qh, centred on 16 (Q5_0, Q5_1).
void five_bit_values(uvec2 qs, uint qh, uint part, out vec4 q[SLICE_RUNS]) {
    [[unroll]] for (uint k = 0; k < 2; ++k) {
        q[k] = quad_values((qs[k] & 0x0F0F0F0Fu) | fifth_bit_bytes(qh, 8 * part + 4 * k), ~0u, 16.0);
        q[2 + k] = quad_values(((qs[k] >> 4) & 0x0F0F0F0Fu) | fifth_bit_bytes(qh, 16 + 8 * part + 4 * k), ~0u, 16.0);
    }
}
#endif
