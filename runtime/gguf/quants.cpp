// Reference (de)quantization, following ggml-quants.c `dequantize_row_*` and `quantize_row_*_ref`
// operation for operation, so that float rounding matches too (built with -ffp-contract=off).
#include "gguf/quants.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "core/error.h"

namespace vkllm::gguf {

float fp16_to_fp32(uint16_t h) {
    const uint32_t sign = uint32_t(h & 0x8000) << 16;
    const uint32_t exponent = (h >> 10) & 0x1F;
    const uint32_t mantissa = h & 0x3FF;
    if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24, exact in f32
        const float magnitude = float(mantissa) * 0x1p-24f;
        return sign ? -magnitude : magnitude;
    }
    if (exponent == 0x1F) return std::bit_cast<float>(sign | 0x7F800000 | (mantissa << 13));
    return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

namespace {

// Shifts `value` right by `shift` bits, rounding to nearest with ties to even.
uint32_t shift_round_even(uint32_t value, uint32_t shift) {
    const uint32_t kept = value >> shift;
    const uint32_t rest = value & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    return kept + ((rest > half || (rest == half && (kept & 1))) ? 1 : 0);
}

}  // namespace

uint16_t fp32_to_fp16(float f) {
    const uint32_t bits = std::bit_cast<uint32_t>(f);
    const uint16_t sign = uint16_t((bits >> 16) & 0x8000);
    const uint32_t magnitude = bits & 0x7FFFFFFF;
    if (magnitude > 0x7F800000) return sign | 0x7E00;    // NaN -> quiet NaN, as ggml's portable path
    if (magnitude >= 0x477FF000) return sign | 0x7C00;   // >= 65520 rounds to infinity
    if (magnitude >= 0x38800000) {                       // normal half: rebias, round 13 bits away
        const uint32_t rebiased = magnitude - (112u << 23);
        return sign | uint16_t(shift_round_even(rebiased, 13));  // a carry correctly bumps the exponent
    }
    if (magnitude <= 0x33000000) return sign;            // <= 2^-25 rounds to zero (the tie is even)
    const uint32_t exponent = magnitude >> 23;           // subnormal half: units of 2^-24
    const uint32_t mantissa = (magnitude & 0x7FFFFF) | 0x800000;
    return sign | uint16_t(shift_round_even(mantissa, 126 - exponent));
}

float bf16_to_fp32(uint16_t h) { return std::bit_cast<float>(uint32_t(h) << 16); }

uint16_t fp32_to_bf16(float f) {
    const uint32_t bits = std::bit_cast<uint32_t>(f);
    if ((bits & 0x7FFFFFFF) > 0x7F800000) return uint16_t((bits >> 16) | 64);  // NaN: force quiet
    return uint16_t((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16);
}

namespace {

constexpr int qk_k = 256;
constexpr float group_max_eps = 1e-15f;  // ggml's GROUP_MAX_EPS: a group this small is all zero

template <class Block>
Block load_block(const std::byte* blocks, size_t i) {
    Block b;
    std::memcpy(&b, blocks + i * sizeof(Block), sizeof(Block));
    return b;
}

template <class Block>
void store_block(std::byte* blocks, size_t i, const Block& b) {
    std::memcpy(blocks + i * sizeof(Block), &b, sizeof(Block));
}

uint32_t load_u32(const uint8_t* p) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
}

// ---- dequantization (one block of values per call) ----

void dequantize_block(const BlockF32& b, float* y) { *y = b.value; }
void dequantize_block(const BlockF16& b, float* y) { *y = fp16_to_fp32(b.value); }
void dequantize_block(const BlockBF16& b, float* y) { *y = bf16_to_fp32(b.value); }

void dequantize_block(const BlockQ4_0& b, float* y) {
    const float d = fp16_to_fp32(b.d);
    for (int j = 0; j < 16; ++j) {
        y[j] = float((b.qs[j] & 0x0F) - 8) * d;
        y[j + 16] = float((b.qs[j] >> 4) - 8) * d;
    }
}

void dequantize_block(const BlockQ4_1& b, float* y) {
    const float d = fp16_to_fp32(b.d), m = fp16_to_fp32(b.m);
    for (int j = 0; j < 16; ++j) {
        y[j] = float(b.qs[j] & 0x0F) * d + m;
        y[j + 16] = float(b.qs[j] >> 4) * d + m;
    }
}

void dequantize_block(const BlockQ5_0& b, float* y) {
    const float d = fp16_to_fp32(b.d);
    const uint32_t qh = load_u32(b.qh);
    for (int j = 0; j < 16; ++j) {
        const int lo = (b.qs[j] & 0x0F) | (((qh >> j) & 1) << 4);
        const int hi = (b.qs[j] >> 4) | (((qh >> (j + 16)) & 1) << 4);
        y[j] = float(lo - 16) * d;
        y[j + 16] = float(hi - 16) * d;
    }
}

void dequantize_block(const BlockQ5_1& b, float* y) {
    const float d = fp16_to_fp32(b.d), m = fp16_to_fp32(b.m);
    const uint32_t qh = load_u32(b.qh);
    for (int j = 0; j < 16; ++j) {
        const int lo = (b.qs[j] & 0x0F) | (((qh >> j) & 1) << 4);
        const int hi = (b.qs[j] >> 4) | (((qh >> (j + 16)) & 1) << 4);
        y[j] = float(lo) * d + m;
        y[j + 16] = float(hi) * d + m;
    }
}

void dequantize_block(const BlockQ8_0& b, float* y) {
    const float d = fp16_to_fp32(b.d);
    for (int j = 0; j < 32; ++j) y[j] = float(b.qs[j]) * d;
}

// The 6-bit scale and min of sub-block j of a Q4_K/Q5_K block (ggml `get_scale_min_k4`).
void scale_min_k4(int j, const uint8_t* s, uint8_t& scale, uint8_t& min) {
    if (j < 4) {
        scale = s[j] & 63;
        min = s[j + 4] & 63;
    } else {
        scale = uint8_t((s[j + 4] & 0x0F) | ((s[j - 4] >> 6) << 4));
        min = uint8_t((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
    }
}

void dequantize_block(const BlockQ4_K& b, float* y) {
    const float d = fp16_to_fp32(b.d), dmin = fp16_to_fp32(b.dmin);
    for (int c = 0; c < 4; ++c) {  // 64 values per chunk: low nibbles, then high nibbles
        uint8_t sc, m;
        scale_min_k4(2 * c, b.scales, sc, m);
        const float d1 = d * sc, m1 = dmin * m;
        scale_min_k4(2 * c + 1, b.scales, sc, m);
        const float d2 = d * sc, m2 = dmin * m;
        const uint8_t* q = b.qs + 32 * c;
        for (int l = 0; l < 32; ++l) y[64 * c + l] = d1 * float(q[l] & 0x0F) - m1;
        for (int l = 0; l < 32; ++l) y[64 * c + 32 + l] = d2 * float(q[l] >> 4) - m2;
    }
}

void dequantize_block(const BlockQ5_K& b, float* y) {
    const float d = fp16_to_fp32(b.d), dmin = fp16_to_fp32(b.dmin);
    for (int c = 0; c < 4; ++c) {
        uint8_t sc, m;
        scale_min_k4(2 * c, b.scales, sc, m);
        const float d1 = d * sc, m1 = dmin * m;
        scale_min_k4(2 * c + 1, b.scales, sc, m);
        const float d2 = d * sc, m2 = dmin * m;
        const uint8_t* q = b.qs + 32 * c;
        const uint8_t low_bit = uint8_t(1 << (2 * c)), high_bit = uint8_t(2 << (2 * c));
        for (int l = 0; l < 32; ++l)
            y[64 * c + l] = d1 * float((q[l] & 0x0F) + ((b.qh[l] & low_bit) ? 16 : 0)) - m1;
        for (int l = 0; l < 32; ++l)
            y[64 * c + 32 + l] = d2 * float((q[l] >> 4) + ((b.qh[l] & high_bit) ? 16 : 0)) - m2;
    }
}

void dequantize_block(const BlockQ6_K& b, float* y) {
    const float d = fp16_to_fp32(b.d);
    for (int n = 0; n < 2; ++n) {  // two halves of 128 values
        const uint8_t* ql = b.ql + 64 * n;
        const uint8_t* qh = b.qh + 32 * n;
        const int8_t* sc = b.scales + 8 * n;
        float* out = y + 128 * n;
        for (int l = 0; l < 32; ++l) {
            const int is = l / 16;
            const int q1 = ((ql[l] & 0x0F) | (((qh[l] >> 0) & 3) << 4)) - 32;
            const int q2 = ((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32;
            const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
            const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
            out[l] = d * float(sc[is + 0]) * float(q1);
            out[l + 32] = d * float(sc[is + 2]) * float(q2);
            out[l + 64] = d * float(sc[is + 4]) * float(q3);
            out[l + 96] = d * float(sc[is + 6]) * float(q4);
        }
    }
}

template <class Block>
void dequantize_blocks(const std::byte* blocks, std::span<float> out, size_t block_size) {
    for (size_t i = 0; i < out.size() / block_size; ++i)
        dequantize_block(load_block<Block>(blocks, i), out.data() + i * block_size);
}

}  // namespace

namespace {

// ---- quantization of the 32-element formats (quantize_row_q*_ref) ----

// The value of largest magnitude in x (the first one on ties), with its sign.
float signed_absmax(const float* x, int n) {
    float amax = 0, max = 0;
    for (int j = 0; j < n; ++j) {
        if (amax < std::fabs(x[j])) {
            amax = std::fabs(x[j]);
            max = x[j];
        }
    }
    return max;
}

BlockF32 quantize_f32(const float* x) { return {*x}; }
BlockF16 quantize_f16(const float* x) { return {fp32_to_fp16(*x)}; }
BlockBF16 quantize_bf16(const float* x) { return {fp32_to_bf16(*x)}; }

BlockQ4_0 quantize_q4_0(const float* x) {
    const float d = signed_absmax(x, 32) / -8;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    BlockQ4_0 b{};
    b.d = fp32_to_fp16(d);
    for (int j = 0; j < 16; ++j) {  // float -> int truncates toward zero, as ggml's (int8_t) cast
        const int lo = std::min(15, int(x[j] * id + 8.5f));
        const int hi = std::min(15, int(x[j + 16] * id + 8.5f));
        b.qs[j] = uint8_t(lo | (hi << 4));
    }
    return b;
}

// Minimum and maximum of 32 values, for the offset formats.
void min_max(const float* x, float& min, float& max) {
    min = x[0];
    max = x[0];
    for (int j = 1; j < 32; ++j) {
        min = std::min(min, x[j]);
        max = std::max(max, x[j]);
    }
}

BlockQ4_1 quantize_q4_1(const float* x) {
    float min, max;
    min_max(x, min, max);
    const float d = (max - min) / 15;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    BlockQ4_1 b{};
    b.d = fp32_to_fp16(d);
    b.m = fp32_to_fp16(min);
    for (int j = 0; j < 16; ++j) {
        const int lo = std::min(15, int((x[j] - min) * id + 0.5f));
        const int hi = std::min(15, int((x[j + 16] - min) * id + 0.5f));
        b.qs[j] = uint8_t(lo | (hi << 4));
    }
    return b;
}

// Packs 32 five-bit values: low nibbles in qs (element j and j+16 share a byte), fifth bits in qh.
void pack_5bit(const int* q, uint8_t* qs, uint8_t* qh) {
    uint32_t high_bits = 0;
    for (int j = 0; j < 16; ++j) {
        qs[j] = uint8_t((q[j] & 0x0F) | ((q[j + 16] & 0x0F) << 4));
        high_bits |= uint32_t((q[j] & 0x10) >> 4) << j;
        high_bits |= uint32_t((q[j + 16] & 0x10) >> 4) << (j + 16);
    }
    std::memcpy(qh, &high_bits, 4);
}

BlockQ5_0 quantize_q5_0(const float* x) {
    const float d = signed_absmax(x, 32) / -16;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    int q[32];
    for (int j = 0; j < 32; ++j) q[j] = std::min(31, int(x[j] * id + 16.5f));
    BlockQ5_0 b{};
    b.d = fp32_to_fp16(d);
    pack_5bit(q, b.qs, b.qh);
    return b;
}

BlockQ5_1 quantize_q5_1(const float* x) {
    float min, max;
    min_max(x, min, max);
    const float d = (max - min) / 31;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    int q[32];
    for (int j = 0; j < 32; ++j) q[j] = int((x[j] - min) * id + 0.5f);
    BlockQ5_1 b{};
    b.d = fp32_to_fp16(d);
    b.m = fp32_to_fp16(min);
    pack_5bit(q, b.qs, b.qh);
    return b;
}

BlockQ8_0 quantize_q8_0(const float* x) {
    float amax = 0;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    BlockQ8_0 b{};
    b.d = fp32_to_fp16(d);
    for (int j = 0; j < 32; ++j) b.qs[j] = int8_t(std::round(x[j] * id));  // roundf: ties away from zero
    return b;
}

// ---- K-quant helpers (ggml-quants.c) ----

// Round to nearest, ties to even, by ggml's float trick; |x| must stay below 2^22.
int nearest_int(float x) {
    const float shifted = x + 12582912.f;
    int32_t bits;
    std::memcpy(&bits, &shifted, 4);
    return (bits & 0x007FFFFF) - 0x00400000;
}

// Symmetric quantization of n values to [-nmax, nmax-1] minimizing the x²-weighted error over 19
// candidate scales (ggml `make_qx_quants` with rmse_type 1, no importance weights). L gets l + nmax.
float make_qx_quants(int n, int nmax, const float* x, int8_t* L) {
    float max = 0, amax = 0;
    for (int i = 0; i < n; ++i) {
        if (std::fabs(x[i]) > amax) {
            amax = std::fabs(x[i]);
            max = x[i];
        }
    }
    if (amax < group_max_eps) {
        std::fill(L, L + n, int8_t(0));
        return 0.f;
    }
    const auto level = [&](float iscale, int i) { return std::clamp(nearest_int(iscale * x[i]), -nmax, nmax - 1); };
    const auto fit = [&](float iscale, float& sumlx, float& suml2) {
        sumlx = suml2 = 0;
        for (int i = 0; i < n; ++i) {
            const float l = float(level(iscale, i));
            const float w = x[i] * x[i];
            sumlx += w * x[i] * l;
            suml2 += w * l * l;
        }
    };
    float iscale = float(-nmax) / max;
    for (int i = 0; i < n; ++i) L[i] = int8_t(level(iscale, i) + nmax);
    float sumlx, suml2;
    fit(iscale, sumlx, suml2);
    float scale = suml2 != 0 ? sumlx / suml2 : 0.0f;
    float best = scale * sumlx;
    for (int is = -9; is <= 9; ++is) {
        if (is == 0) continue;
        iscale = -(float(nmax) + 0.1f * float(is)) / max;
        fit(iscale, sumlx, suml2);
        if (suml2 > 0 && sumlx * sumlx > best * suml2) {
            for (int i = 0; i < n; ++i) L[i] = int8_t(level(iscale, i) + nmax);
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

// Asymmetric quantization of n values to [0, nmax] as scale*L - min, searching nstep+1 scales and
// fitting scale and min by weighted least squares (ggml `make_qkx2_quants`, squared error).
float make_qkx2_quants(int n, int nmax, const float* x, const float* weights, uint8_t* L, float& the_min,
                       float rmin, float rdelta, int nstep) {
    float min = x[0], max = x[0];
    float sum_w = weights[0];
    float sum_x = sum_w * x[0];
    for (int i = 1; i < n; ++i) {
        min = x[i] < min ? x[i] : min;
        max = x[i] > max ? x[i] : max;
        sum_w += weights[i];
        sum_x += weights[i] * x[i];
    }
    if (min > 0) min = 0;
    if (max == min) {
        std::fill(L, L + n, uint8_t(0));
        the_min = -min;
        return 0.f;
    }
    float iscale = float(nmax) / (max - min);
    float scale = 1 / iscale;
    float best_error = 0;
    for (int i = 0; i < n; ++i) {
        L[i] = uint8_t(std::clamp(nearest_int(iscale * (x[i] - min)), 0, nmax));
        const float diff = scale * float(L[i]) + min - x[i];
        best_error += weights[i] * (diff * diff);
    }
    uint8_t candidate[32];
    for (int is = 0; is <= nstep; ++is) {
        iscale = (rmin + rdelta * float(is) + float(nmax)) / (max - min);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < n; ++i) {
            const int l = std::clamp(nearest_int(iscale * (x[i] - min)), 0, nmax);
            candidate[i] = uint8_t(l);
            const float wl = weights[i] * float(l);
            sum_l += wl;
            sum_l2 += wl * float(l);
            sum_xl += wl * x[i];
        }
        const float D = sum_w * sum_l2 - sum_l * sum_l;
        if (!(D > 0)) continue;
        float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
        float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
        if (this_min > 0) {
            this_min = 0;
            this_scale = sum_xl / sum_l2;
        }
        float error = 0;
        for (int i = 0; i < n; ++i) {
            const float diff = this_scale * float(candidate[i]) + this_min - x[i];
            error += weights[i] * (diff * diff);
        }
        if (error < best_error) {
            std::copy(candidate, candidate + n, L);
            best_error = error;
            scale = this_scale;
            min = this_min;
        }
    }
    the_min = -min;
    return scale;
}

}  // namespace

namespace {

// Sub-block scales and mins (8 of each, 6 bits) packed into 12 bytes; the inverse of scale_min_k4.
void pack_scales_k4(const float* scales, const float* mins, float max_scale, float max_min, uint8_t* packed) {
    const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
    const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
    std::fill(packed, packed + 12, uint8_t(0));
    for (int j = 0; j < 8; ++j) {
        const uint8_t ls = std::min<uint8_t>(63, uint8_t(nearest_int(inv_scale * scales[j])));
        const uint8_t lm = std::min<uint8_t>(63, uint8_t(nearest_int(inv_min * mins[j])));
        if (j < 4) {
            packed[j] = ls;
            packed[j + 4] = lm;
        } else {
            packed[j + 4] = uint8_t((ls & 0x0F) | ((lm & 0x0F) << 4));
            packed[j - 4] |= uint8_t((ls >> 4) << 6);
            packed[j] |= uint8_t((lm >> 4) << 6);
        }
    }
}

// The shared first half of quantize_row_q4_K_ref and q5_K_ref: per-sub-block scale and min
// search, packed scales, then every value requantized against the rounded scales into L.
void quantize_k4_levels(const float* x, int nmax, float rmin, float rdelta, int nstep, uint16_t& d_out,
                        uint16_t& dmin_out, uint8_t* packed_scales, uint8_t* L) {
    float scales[8], mins[8], weights[32];
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < 8; ++j) {
        float sum_x2 = 0;
        for (int l = 0; l < 32; ++l) sum_x2 += x[32 * j + l] * x[32 * j + l];
        const float av_x = std::sqrt(sum_x2 / 32);
        for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(x[32 * j + l]);
        scales[j] = make_qkx2_quants(32, nmax, x + 32 * j, weights, L + 32 * j, mins[j], rmin, rdelta, nstep);
        max_scale = scales[j] > max_scale ? scales[j] : max_scale;
        max_min = mins[j] > max_min ? mins[j] : max_min;
    }
    pack_scales_k4(scales, mins, max_scale, max_min, packed_scales);
    d_out = fp32_to_fp16(max_scale / 63.f);
    dmin_out = fp32_to_fp16(max_min / 63.f);
    for (int j = 0; j < 8; ++j) {
        uint8_t sc, m;
        scale_min_k4(j, packed_scales, sc, m);
        const float d = fp16_to_fp32(d_out) * sc;
        if (d == 0) continue;  // keeps the levels make_qkx2_quants chose, as ggml does
        const float dm = fp16_to_fp32(dmin_out) * m;
        for (int i = 0; i < 32; ++i) L[32 * j + i] = uint8_t(std::clamp(nearest_int((x[32 * j + i] + dm) / d), 0, nmax));
    }
}

BlockQ4_K quantize_q4_k(const float* x) {
    BlockQ4_K b{};
    uint8_t L[qk_k];
    quantize_k4_levels(x, 15, -1.f, 0.1f, 20, b.d, b.dmin, b.scales, L);
    for (int c = 0; c < 4; ++c)
        for (int l = 0; l < 32; ++l) b.qs[32 * c + l] = uint8_t(L[64 * c + l] | (L[64 * c + 32 + l] << 4));
    return b;
}

BlockQ5_K quantize_q5_k(const float* x) {
    BlockQ5_K b{};
    uint8_t L[qk_k];
    quantize_k4_levels(x, 31, -0.5f, 0.1f, 15, b.d, b.dmin, b.scales, L);
    for (int c = 0; c < 4; ++c) {
        for (int l = 0; l < 32; ++l) {
            const int lo = L[64 * c + l], hi = L[64 * c + 32 + l];
            b.qs[32 * c + l] = uint8_t((lo & 0x0F) | ((hi & 0x0F) << 4));
            b.qh[l] |= uint8_t(((lo >> 4) << (2 * c)) | ((hi >> 4) << (2 * c + 1)));
        }
    }
    return b;
}

BlockQ6_K quantize_q6_k(const float* x) {
    int8_t L[qk_k];
    float scales[16];
    float max_scale = 0, max_abs_scale = 0;
    for (int ib = 0; ib < 16; ++ib) {
        scales[ib] = make_qx_quants(16, 32, x + 16 * ib, L + 16 * ib);
        if (std::fabs(scales[ib]) > max_abs_scale) {
            max_abs_scale = std::fabs(scales[ib]);
            max_scale = scales[ib];
        }
    }
    BlockQ6_K b{};
    if (max_abs_scale < group_max_eps) return b;
    const float iscale = -128.f / max_scale;
    b.d = fp32_to_fp16(1 / iscale);
    for (int ib = 0; ib < 16; ++ib) b.scales[ib] = int8_t(std::min(127, nearest_int(iscale * scales[ib])));
    for (int j = 0; j < 16; ++j) {
        const float d = fp16_to_fp32(b.d) * float(b.scales[j]);
        if (d == 0) continue;  // keeps the levels make_qx_quants chose, as ggml does
        for (int i = 0; i < 16; ++i) L[16 * j + i] = int8_t(std::clamp(nearest_int(x[16 * j + i] / d), -32, 31) + 32);
    }
    for (int n = 0; n < 2; ++n) {
        const int8_t* q = L + 128 * n;
        for (int l = 0; l < 32; ++l) {
            b.ql[64 * n + l] = uint8_t((q[l] & 0x0F) | ((q[l + 64] & 0x0F) << 4));
            b.ql[64 * n + l + 32] = uint8_t((q[l + 32] & 0x0F) | ((q[l + 96] & 0x0F) << 4));
            b.qh[32 * n + l] = uint8_t((q[l] >> 4) | ((q[l + 32] >> 4) << 2) | ((q[l + 64] >> 4) << 4) | ((q[l + 96] >> 4) << 6));
        }
    }
    return b;
}

template <class Block, Block (*quantize_one)(const float*)>
void quantize_blocks(std::span<const float> values, std::byte* blocks, size_t block_size) {
    for (size_t i = 0; i < values.size() / block_size; ++i)
        store_block(blocks, i, quantize_one(values.data() + i * block_size));
}

void check_sizes(GgmlType type, size_t n_values, size_t n_bytes, const char* what) {
    if (!has_reference(type)) fail("no reference {} for ggml type {}", what, type_name(type));
    if (n_values % block_size(type) != 0)
        fail("cannot {} {} values of {}: not a multiple of its block size {}", what, n_values, type_name(type),
             block_size(type));
    if (n_bytes != row_bytes(type, n_values))
        fail("cannot {} {} values of {}: {} bytes given, {} needed", what, n_values, type_name(type), n_bytes,
             row_bytes(type, n_values));
}

}  // namespace

bool has_reference(GgmlType type) { return runs_on_vkllm(type); }

void dequantize(GgmlType type, std::span<const std::byte> blocks, std::span<float> out) {
    check_sizes(type, out.size(), blocks.size(), "dequantize");
    const std::byte* p = blocks.data();
    switch (type) {
#define VKLLM_WEIGHT_TYPE(type, name, file_type, fp16_kernels) \
    case GgmlType::type: return dequantize_blocks<Block##type>(p, out, block_size(GgmlType::type));
#include "gguf/weight_types.def"
#undef VKLLM_WEIGHT_TYPE
        default: return;  // check_sizes rejected every other type
    }
}

void quantize(GgmlType type, std::span<const float> values, std::span<std::byte> blocks) {
    check_sizes(type, values.size(), blocks.size(), "quantize");
    for (size_t i = 0; i < values.size(); ++i)
        if (!std::isfinite(values[i])) fail("cannot quantize to {}: value {} is {}", type_name(type), i, values[i]);
    std::byte* p = blocks.data();
    switch (type) {
#define VKLLM_WEIGHT_TYPE(type, name, file_type, fp16_kernels) \
    case GgmlType::type: return quantize_blocks<Block##type, quantize_##name>(values, p, block_size(GgmlType::type));
#include "gguf/weight_types.def"
#undef VKLLM_WEIGHT_TYPE
        default: return;  // check_sizes rejected every other type
    }
}

std::vector<float> dequantize(const Tensor& tensor) {
    std::vector<float> out(tensor.n_elements());
    dequantize(tensor.type, tensor.data, out);
    return out;
}

std::vector<std::byte> quantize(GgmlType type, std::span<const float> values) {
    if (values.size() % block_size(type) != 0)
        fail("cannot quantize {} values of {}: not a multiple of its block size {}", values.size(), type_name(type),
             block_size(type));
    std::vector<std::byte> blocks(row_bytes(type, values.size()));
    quantize(type, values, blocks);
    return blocks;
}

}  // namespace vkllm::gguf
