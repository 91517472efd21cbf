// Row sources: decoding checkpoint dtypes and the row rearrangements the mappings share.
#include "convert/plan.h"

#include <cstring>

#include "core/error.h"
#include "gguf/quants.h"

namespace vkllm::convert {

namespace {

// OCP FP8 E4M3 (no infinities; S.1111.111 is NaN), exactly widened.
float fp8_e4m3_to_fp32(uint8_t bits) {
    const int exponent = (bits >> 3) & 0xF, mantissa = bits & 7;
    const float sign = bits & 0x80 ? -1.0f : 1.0f;
    if (exponent == 0xF && mantissa == 7) return std::numeric_limits<float>::quiet_NaN();
    if (exponent == 0) return sign * std::ldexp(float(mantissa), -9);  // subnormal: m/8 * 2^-6
    return sign * std::ldexp(float(8 + mantissa), exponent - 10);     // (1 + m/8) * 2^(e-7)
}

uint64_t row_length(const SafeTensor& t) { return t.shape.empty() ? 1 : t.shape.back(); }

}  // namespace

uint64_t PlannedTensor::n_elements() const {
    uint64_t n = 1;
    for (uint64_t d : ne) n *= d;
    return n;
}

void decode(const SafeTensor& t, uint64_t first, std::span<float> out) {
    const uint64_t size = dtype_bytes(t.dtype);
    if (first > t.n_elements() || out.size() > t.n_elements() - first)
        fail("{}: tensor '{}': elements {} to {} are past its {}", t.file, t.name, first, first + out.size(),
             t.n_elements());
    const std::byte* p = t.data.data() + first * size;
    for (size_t i = 0; i < out.size(); ++i, p += size) {
        switch (t.dtype) {
            case Dtype::F32: std::memcpy(&out[i], p, 4); break;
            case Dtype::F16:
            case Dtype::BF16: {
                uint16_t bits;
                std::memcpy(&bits, p, 2);
                out[i] = t.dtype == Dtype::F16 ? gguf::fp16_to_fp32(bits) : gguf::bf16_to_fp32(bits);
                break;
            }
            case Dtype::F8_E4M3: out[i] = fp8_e4m3_to_fp32(uint8_t(*p)); break;
        }
    }
}

std::vector<uint64_t> ggml_shape(const SafeTensor& t) {
    if (t.shape.empty()) return {1};
    return {t.shape.rbegin(), t.shape.rend()};
}

RowSource copy_rows(const SafeTensor& t) {
    return [&t](uint64_t first, std::span<float> out) { decode(t, first * row_length(t), out); };
}

RowSource plus_one_rows(const SafeTensor& t) {
    return [&t](uint64_t first, std::span<float> out) {
        decode(t, first * row_length(t), out);
        for (float& v : out) v += 1.0f;
    };
}

RowSource rope_permuted_rows(const SafeTensor& t, uint64_t n_head) {
    if (t.shape.size() != 2 || n_head == 0 || t.shape[0] % (2 * n_head) != 0)
        fail("{}: tensor '{}': {} rows do not split into {} heads of pairs for the RoPE permutation", t.file,
             t.name, t.shape.empty() ? 0 : t.shape[0], n_head);
    const uint64_t head_dim = t.shape[0] / n_head, half = head_dim / 2, cols = t.shape[1];
    return [&t, head_dim, half, cols](uint64_t first, std::span<float> out) {
        for (uint64_t r = 0; r < out.size() / cols; ++r) {
            // output row h*hd + 2i + j holds input row h*hd + j*hd/2 + i
            const uint64_t row = first + r, head = row / head_dim, within = row % head_dim;
            const uint64_t source = head * head_dim + (within % 2) * half + within / 2;
            decode(t, source * cols, out.subspan(r * cols, cols));
        }
    };
}

}  // namespace vkllm::convert
