// Values as the KV cache stores them (layout: runtime/ops/attention_config.h), shared by the cache
// writers. Include after half_rte.glsl.

// Four values quantized to Q8_0 with 1 / d as ggml's quantize_row_q8_0 does (roundf: half away from
// zero), packed lowest byte first.
uint q8_0_pack4(vec4 v, float inverse) {
    // The fractional part is exact (Sterbenz), so halves are caught without x + 0.5 rounding.
    const vec4 scaled = v * inverse, whole = floor(abs(scaled));
    const vec4 rounded = whole + vec4(greaterThanEqual(abs(scaled) - whole, vec4(0.5)));
    const uvec4 q = uvec4(ivec4(sign(scaled) * rounded)) & 0xFFu;
    return q.x | q.y << 8 | q.z << 16 | q.w << 24;
}
