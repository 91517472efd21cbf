// RoPE's rotation for one pair at one position (model-notes.md B), shared by rope.comp and
// rope_kv_write.comp. The angle pos * freq_i is taken modulo one turn in 64-bit fixed point: the host
// gives each pair frac(freq_i / 2pi) * 2^64 (YaRN mix, freq_scale and freq_factors folded in), and
// pos * that, wrapped to 64 bits, is the angle's fraction of a turn. An f32 angle would be off by
// pos * 2^-24 radians, already 0.06 rad at position 10^6; this keeps the rotation exact at every position.

// (cos, sin) * mscale for the pair whose table entry is `phase` ((low, high) words).
vec2 rope_cos_sin(uint pos, uvec2 phase, float mscale) {
    // High word of pos * phase (mod 2^64): the turn fraction's top 32 bits, taken as signed so the
    // angle lands in [-pi, pi) where sin and cos are most accurate.
    uint carry, low;
    umulExtended(pos, phase.x, carry, low);
    const int turn = int(carry + pos * phase.y);
    const float theta = float(turn) * (6.283185307179586 / 4294967296.0);
    return vec2(cos(theta), sin(theta)) * mscale;
}
