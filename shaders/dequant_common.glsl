// Shared by every dequant_<type>.glsl: the weight binding, loads at byte offsets, and the value types
// of the fp16 (F16=1) and fp32 variants.
//
// A weight type's include defines how a row is cut into units of 32 elements (one unit = 8 runs of 4
// consecutive elements) and decodes one unit into
//   q[8]            the runs' quantized values, exact small integers (or the raw F16/F32/BF16 values)
//   scale_bias[g]   per scale group g of 8 / SCALE_GROUPS consecutive runs:
//                   value = q * run_scale(r) * scale_bias[g].x + scale_bias[g].y
// so matvec can factor the scales out of its dot products and matmul can write values into a tile.
// run_scale is 1 unless the type defines RUN_SCALES: its q are then the quantized values times powers
// of two, as they sit in their word (a mask, no shift), and a dot product multiplies x by run_scale
// instead, once for all the rows that share it. Both are exact.
//
// For matvec on GPUs (SLICES defined) each type also cuts its blocks into slices (dequant_slices.glsl).
#extension GL_EXT_control_flow_attributes : require
#ifdef F16
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#define QVEC4 f16vec4
#else
#define QVEC4 vec4
#endif

const uint UNIT_ELEMS = 32;
const uint UNIT_RUNS = 8;

#ifndef RUN_SCALES
vec4 run_scale(uint run) { return vec4(1.0); }
#endif

// The weights, bound once per split segment, read as 32-bit words, pairs or quads of words (the
// index counts words, pairs or quads). Blocks of 18, 22, 34 or 210 bytes are only 2-byte aligned, so
// those types go through the funnel loads below.
// TEXEL_READS binds them as a uniform texel buffer (texel_reads.glsl).
#ifdef TEXEL_READS
#include "texel_reads.glsl"
layout(set = 0, binding = 0) uniform utextureBuffer weight_texels;
uvec4 weight_words4(uint quad) { return texelFetch(weight_texels, int(quad)); }
uvec2 weight_words2(uint pair) { return texel_pair(weight_texels, pair); }
uint weight_word(uint word) { return texel_word(weight_texels, word); }
// Words word .. word + count - 1 (count <= 9, a constant) into words[0 ..]: a texel fetch is a
// gather on a CPU whatever it returns, so the texels they span are fetched once each (clamped to the
// binding: a fetch past it is undefined) and each word is picked from them by its offset in the first.
void weight_words_at(uint word, const uint count, out uint words[9]) {
    const uint first = word >> 2, skip = word & 3u;
    const int last = textureSize(weight_texels) - 1;
    uint span[12];
    [[unroll]] for (uint t = 0; t < 3; ++t) {
        if (4 * t < count + 3) {
            const uvec4 texel = texelFetch(weight_texels, min(int(first + t), last));
            [[unroll]] for (uint c = 0; c < 4; ++c) span[4 * t + c] = texel[c];
        }
    }
    [[unroll]] for (uint i = 0; i < count; ++i)
        words[i] = skip == 0u ? span[i] : skip == 1u ? span[i + 1] : skip == 2u ? span[i + 2] : span[i + 3];
}
#else
layout(set = 0, binding = 0, std430) readonly buffer WeightWords { uint weight_u32[]; };
layout(set = 0, binding = 0, std430) readonly buffer WeightWords2 { uvec2 weight_u32x2[]; };
layout(set = 0, binding = 0, std430) readonly buffer WeightWords4 { uvec4 weight_u32x4[]; };
uvec4 weight_words4(uint quad) { return weight_u32x4[quad]; }
uvec2 weight_words2(uint pair) { return weight_u32x2[pair]; }
uint weight_word(uint word) { return weight_u32[word]; }
void weight_words_at(uint word, const uint count, out uint words[9]) {
    [[unroll]] for (uint i = 0; i < count; ++i) words[i] = weight_u32[word + i];
}
#endif

// The fp16 value at an even byte offset.
float load_half(uint byte_offset) {
    return unpackHalf2x16(weight_word(byte_offset >> 2) >> ((byte_offset & 2u) << 3)).x;
}

// Joins two consecutive words into the word starting `shift` (0 or 16) bits into the first.
// (hi << 1) << (31 - shift) is hi << 16 for shift 16 and 0 for shift 0, without a 32-bit shift.
uint funnel(uint lo, uint hi, uint shift) {
    return (lo >> shift) | ((hi << 1) << (31u - shift));
}

// Loads at an even byte offset touch only the words overlapping the bytes they return, so a weight
// binding must cover its last byte's whole word (its size rounded up to 4 bytes), nothing more.
// The word after the aligned ones matters only when the offset is 2 mod 4 (funnel drops it otherwise):
// through texel buffers it is read only then; from storage buffers always, clamped to the binding, so
// that no branch splits the loads a GPU issues together.
uint next_word(uint word, uint shift) {
#ifdef TEXEL_READS
    uint value = 0u;
    if (shift != 0u) value = weight_word(word);
    return value;
#else
    return weight_word(min(word, uint(weight_u32.length()) - 1u));
#endif
}

// The 32-bit word at an even byte offset.
uint load_u32_even(uint byte_offset) {
    uint word = byte_offset >> 2, shift = (byte_offset & 2u) << 3;
    return funnel(weight_word(word), next_word(word + 1, shift), shift);
}

// Two words at an even byte offset.
uvec2 load_u32x2_even(uint byte_offset) {
    uint word = byte_offset >> 2, shift = (byte_offset & 2u) << 3;
    uint w0 = weight_word(word), w1 = weight_word(word + 1), w2 = next_word(word + 2, shift);
    return uvec2(funnel(w0, w1, shift), funnel(w1, w2, shift));
}

// Four words at an even byte offset.
uvec4 load_u32x4_even(uint byte_offset) {
    uint word = byte_offset >> 2, shift = (byte_offset & 2u) << 3;
    uint w0 = weight_word(word), w1 = weight_word(word + 1), w2 = weight_word(word + 2);
    uint w3 = weight_word(word + 3), w4 = next_word(word + 4, shift);
    return uvec4(funnel(w0, w1, shift), funnel(w1, w2, shift), funnel(w2, w3, shift), funnel(w3, w4, shift));
}

// A block that opens with an f16 scale at an even byte offset (Q4_0, Q8_0): the `count` words after
// the scale into qs[0 ..] (count <= 8, a constant), and the scale. The block's words are read from the
// one holding its first byte; a word after the scale straddles two of them unless that byte is the
// upper half of a word.
float half_led_block(uint block_byte, const uint count, out uint qs[8]) {
    const uint shift = (block_byte & 2u) << 3;
    uint words[9];
    weight_words_at(block_byte >> 2, count + 1, words);
    [[unroll]] for (uint i = 0; i < count; ++i) qs[i] = shift == 0u ? funnel(words[i], words[i + 1], 16u) : words[i + 1];
    return unpackHalf2x16(words[0] >> shift).x;
}

// The four bytes of a word, and its four low / high nibbles, lowest byte first.
uvec4 bytes_of(uint word) { return (uvec4(word) >> uvec4(0, 8, 16, 24)) & 0xFFu; }
uvec4 low_nibbles(uint word) { return (uvec4(word) >> uvec4(0, 8, 16, 24)) & 0xFu; }
uvec4 high_nibbles(uint word) { return (uvec4(word) >> uvec4(4, 12, 20, 28)) & 0xFu; }
// Bit `bit` of each of the four bytes of a word.
uvec4 byte_bits(uint word, uint bit) { return (uvec4(word) >> (uvec4(0, 8, 16, 24) + bit)) & 1u; }
// Bits first..first+3 of `bits` at bit 4 of bytes 0..3: the fifth bits of Q5_0 and Q5_1 elements. One
// multiply spreads the four bits 7 apart (its shifted copies do not overlap, so nothing carries).
uint fifth_bit_bytes(uint bits, uint first) { return ((((bits >> first) & 0xFu) * 0x00204081u) & 0x01010101u) << 4; }
// The four bytes of a word as signed int8.
ivec4 signed_bytes_of(uint word) { return ivec4(uvec4(word) << uvec4(24, 16, 8, 0)) >> 24; }
