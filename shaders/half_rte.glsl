// f32 -> f16 bits rounded to nearest even, as ggml's FP32_TO_FP16, in integer arithmetic: the rounding
// of packHalf2x16 is left to the implementation (round-to-zero on some), and a cache written here must
// hold the same bits as llama.cpp's. Overflow gives inf, NaN stays a quiet NaN.
uint half_bits_rte(float value) {
    const uint bits = floatBitsToUint(value);
    const uint sign = (bits >> 16) & 0x8000u;
    const uint magnitude = bits & 0x7FFFFFFFu;
    if (magnitude > 0x7F800000u) return sign | 0x7E00u;
    if (magnitude >= 0x477FF000u) return sign | 0x7C00u;  // 65520 and up round to inf
    if (magnitude >= 0x38800000u) {                       // a normal half: rebias, round 13 bits off
        const uint rounded = magnitude + 0xFFFu + ((magnitude >> 13) & 1u);
        return sign | ((rounded - 0x38000000u) >> 13);
    }
    if (magnitude < 0x33000000u) return sign;  // below half the smallest subnormal (2^-25): zero
    // A subnormal half counts units of 2^-24: the 24-bit significand shifted right by 126 - exponent.
    const uint exponent = magnitude >> 23, shift = 126u - exponent;
    const uint significand = (magnitude & 0x7FFFFFu) | 0x800000u;
    uint units = significand >> shift;
    const uint rest = significand & ((1u << shift) - 1u), halfway = 1u << (shift - 1u);
    if (rest > halfway || (rest == halfway && (units & 1u) != 0u)) ++units;
    return sign | units;
}
