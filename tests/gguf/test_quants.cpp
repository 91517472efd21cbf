// The reference (de)quantizers: exact scalar conversions, hand-computed blocks, error bounds on
// random data, and agreement with the quantized tensors llama.cpp wrote into the fixtures.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <random>

#include "core/error.h"
#include "gguf/quants.h"
#include "gguf/reader.h"
#include "samples.h"
#include "test_main.h"

using namespace vkllm::gguf;

// The compiler's IEEE half type: g++ 12 has no C++ _Float16 on aarch64 (only x86), though it defines
// __FLT16_MANT_DIG__ there; aarch64's __fp16 is IEEE binary16 converted by one fcvt.
#if defined(__aarch64__)
#define COMPILER_HALF __fp16
#elif defined(__FLT16_MANT_DIG__)
#define COMPILER_HALF _Float16
#endif

namespace {

constexpr GgmlType reference_types[] = {GgmlType::F32,  GgmlType::F16,  GgmlType::BF16, GgmlType::Q4_0,
                                        GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q8_0,
                                        GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K};

std::vector<float> random_normal(size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> v(n);
    for (float& x : v) x = normal(rng);
    return v;
}

template <class Block>
Block as_block(const std::vector<std::byte>& bytes) {
    REQUIRE(bytes.size() == sizeof(Block));
    Block b;
    std::memcpy(&b, bytes.data(), sizeof(Block));
    return b;
}

}  // namespace

TEST_CASE("fp16: every half survives the round trip through f32") {
    for (uint32_t h = 0; h < 0x10000; ++h) {
        const float f = fp16_to_fp32(uint16_t(h));
        const bool nan = (h & 0x7C00) == 0x7C00 && (h & 0x03FF) != 0;
        if (nan) {
            CHECK(std::isnan(f));
            CHECK(fp32_to_fp16(f) == ((h & 0x8000) | 0x7E00));
        } else if (fp32_to_fp16(f) != h) {
            FAIL_CHECK("half " << h << " came back as " << fp32_to_fp16(f));
        }
    }
    CHECK(fp16_to_fp32(0x3C00) == 1.0f);
    CHECK(fp16_to_fp32(0x0001) == 0x1p-24f);
    CHECK(fp16_to_fp32(0xFBFF) == -65504.0f);
}

TEST_CASE("fp16: f32 values between two halves round to the nearer, ties to even") {
    for (uint16_t h = 0; h < 0x7C00; ++h) {  // every finite positive half and the gap above it
        const float lo = fp16_to_fp32(h);
        const float hi = h == 0x7BFF ? 65536.0f : fp16_to_fp32(uint16_t(h + 1));
        const float mid = (lo + hi) / 2;  // exact: halves carry 11 significant bits
        const uint16_t even = (h & 1) ? uint16_t(h + 1) : h;
        if (fp32_to_fp16(mid) != even || fp32_to_fp16(std::nextafter(mid, 0.0f)) != h ||
            fp32_to_fp16(std::nextafter(mid, 1e9f)) != uint16_t(h + 1) || fp32_to_fp16(-mid) != (0x8000 | even))
            FAIL_CHECK("rounding between halves " << h << " and " << h + 1);
    }
    CHECK(fp32_to_fp16(1e9f) == 0x7C00);
    CHECK(fp32_to_fp16(-INFINITY) == 0xFC00);
    CHECK(fp32_to_fp16(1e-30f) == 0);
    CHECK(fp32_to_fp16(-0.0f) == 0x8000);
#ifdef COMPILER_HALF
    std::mt19937 rng(3);
    for (int i = 0; i < 1000000; ++i) {  // the compiler's own conversion, on arbitrary bit patterns
        const float f = std::bit_cast<float>(uint32_t(rng()));
        if (std::isnan(f)) continue;
        if (fp32_to_fp16(f) != std::bit_cast<uint16_t>(static_cast<COMPILER_HALF>(f)))
            FAIL_CHECK("f32 bits " << std::bit_cast<uint32_t>(f));
    }
#endif
}

TEST_CASE("bf16: truncation with round to nearest even, NaN kept quiet") {
    CHECK(fp32_to_bf16(1.0f) == 0x3F80);
    CHECK(fp32_to_bf16(std::bit_cast<float>(0x3F808000u)) == 0x3F80);  // tie, even stays
    CHECK(fp32_to_bf16(std::bit_cast<float>(0x3F818000u)) == 0x3F82);  // tie, odd rounds up
    CHECK(fp32_to_bf16(std::bit_cast<float>(0x3F808001u)) == 0x3F81);
    CHECK(fp32_to_bf16(std::bit_cast<float>(0x7F7FFFFFu)) == 0x7F80);  // the largest float rounds to inf
    CHECK(fp32_to_bf16(std::bit_cast<float>(0x7F800001u)) == 0x7FC0);  // signalling NaN made quiet
    CHECK(bf16_to_fp32(0xC000) == -2.0f);
}

TEST_CASE("q8_0 known answer: d = amax/127, round half away from zero") {
    std::vector<float> x(32, 0.0f);
    x[0] = 127.0f;  // amax 127: d = 1 exactly
    x[1] = 2.5f;
    x[2] = -2.5f;
    x[3] = 0.5f;
    x[4] = -126.4f;
    const BlockQ8_0 b = as_block<BlockQ8_0>(quantize(GgmlType::Q8_0, x));
    CHECK(b.d == 0x3C00);
    CHECK(b.qs[0] == 127);
    CHECK(b.qs[1] == 3);   // roundf, not round-to-even (which gives 2)
    CHECK(b.qs[2] == -3);
    CHECK(b.qs[3] == 1);
    CHECK(b.qs[4] == -126);
    CHECK(b.qs[5] == 0);
    std::vector<float> y(32);
    dequantize(GgmlType::Q8_0, std::as_bytes(std::span(&b, 1)), y);
    CHECK(y[1] == 3.0f);
    CHECK(y[4] == -126.0f);
}

TEST_CASE("q4_0 known answer: d = max/-8, levels trunc(x/d + 8.5) clamped to 15, nibbles split by half") {
    std::vector<float> x(32);
    for (int j = 0; j < 32; ++j) x[j] = float(j % 16) - 7.5f;  // -7.5 .. 7.5
    x[5] = 8.0f;  // the signed max: d = 8 / -8 = -1 exactly
    const BlockQ4_0 b = as_block<BlockQ4_0>(quantize(GgmlType::Q4_0, x));
    CHECK(b.d == 0xBC00);  // -1.0
    // With d = -1: level = trunc(8.5 - x), at most 15.
    const auto level = [](float v) { return std::min(15, int(8.5f - v)); };
    for (int j = 0; j < 16; ++j) {
        CHECK((b.qs[j] & 0x0F) == level(x[j]));
        CHECK((b.qs[j] >> 4) == level(x[j + 16]));
    }
    CHECK((b.qs[5] & 0x0F) == 0);   // x = 8 -> 0.5 -> 0
    CHECK((b.qs[0] & 0x0F) == 15);  // x = -7.5 -> 16 -> clamped
    std::vector<float> y(32);
    dequantize(GgmlType::Q4_0, std::as_bytes(std::span(&b, 1)), y);
    CHECK(y[5] == 8.0f);   // (0 - 8) * -1
    CHECK(y[0] == -7.0f);  // (15 - 8) * -1
}

TEST_CASE("round trips stay within each format's error on random rows of several lengths") {
    struct Bound {
        GgmlType type;
        double max_relative_rms;  // of the whole row
    };
    // About 1.25x the noise of a uniform quantizer with each format's step on N(0,1) data, e.g. q4_0:
    // step amax/8 over 32 values (amax ~2.2) gives 0.28/sqrt(12) = 0.08; q6_K: amax(16)/32 -> 0.016.
    const Bound bounds[] = {{GgmlType::F32, 0},       {GgmlType::F16, 3e-4},    {GgmlType::BF16, 2e-3},
                            {GgmlType::Q8_0, 7e-3},   {GgmlType::Q5_0, 5.5e-2}, {GgmlType::Q5_1, 5e-2},
                            {GgmlType::Q4_0, 1.1e-1}, {GgmlType::Q4_1, 1e-1},   {GgmlType::Q6_K, 2.2e-2},
                            {GgmlType::Q5_K, 4.5e-2}, {GgmlType::Q4_K, 9e-2}};
    for (const Bound& bound : bounds) {
        for (size_t n : {size_t(256), size_t(1024), size_t(4352)}) {
            const uint32_t seed = uint32_t(n) * 31 + uint32_t(bound.type);
            INFO(type_name(bound.type) << " n=" << n << " seed=" << seed);
            const std::vector<float> x = random_normal(n, seed);
            std::vector<float> y(n);
            dequantize(bound.type, quantize(bound.type, x), y);
            double error = 0, norm = 0;
            for (size_t i = 0; i < n; ++i) {
                error += double(y[i] - x[i]) * double(y[i] - x[i]);
                norm += double(x[i]) * double(x[i]);
            }
            CHECK(std::sqrt(error / norm) <= bound.max_relative_rms);
        }
    }
}

TEST_CASE("all-zero and constant blocks quantize without division by zero") {
    for (GgmlType type : reference_types) {
        INFO(type_name(type));
        for (float value : {0.0f, 0.75f, -3.0f}) {
            const std::vector<float> x(256, value);
            std::vector<float> y(256);
            dequantize(type, quantize(type, x), y);
            for (float v : y) CHECK(std::fabs(v - value) <= 0.02f * std::fabs(value) + 1e-6f);
        }
    }
}

TEST_CASE("wrong sizes, types and non-finite inputs are errors, not undefined behaviour") {
    std::vector<float> out(32);
    CHECK_THROWS_AS(dequantize(GgmlType::Q8_0, std::vector<std::byte>(33), out), vkllm::Error);
    std::vector<float> block(256);
    CHECK_THROWS_AS(dequantize(GgmlType::Q2_K, std::vector<std::byte>(84), block), vkllm::Error);
    CHECK_THROWS_AS(quantize(GgmlType::Q4_K, std::vector<float>(32)), vkllm::Error);
    std::vector<float> x(32, 1.0f);
    x[7] = NAN;
    CHECK_THROWS_AS(quantize(GgmlType::Q8_0, x), vkllm::Error);
    x[7] = INFINITY;
    CHECK_THROWS_AS(quantize(GgmlType::Q4_0, x), vkllm::Error);
}

TEST_CASE("quantized fixture tensors dequantize to finite, plausible values") {
    if (!vkllm::test::shared_path("")) return;
    const auto files = test::shared_ggufs();
    size_t checked = 0;
    for (const auto& path : files) {
        const File f = File::open(path);
        for (const Tensor& t : f.tensors()) {
            if (!has_reference(t.type)) continue;
            INFO(path.string() << " tensor " << t.name);
            const std::vector<float> y = dequantize(t);
            double sum2 = 0;
            bool finite = true;
            for (float v : y) {
                finite = finite && std::isfinite(v);
                sum2 += double(v) * v;
            }
            CHECK(finite);
            const double rms = std::sqrt(sum2 / double(y.size()));
            CHECK(rms < 100.0);
            if (t.type != GgmlType::F32) CHECK(rms > 1e-4);  // quantized weights are never all zero here
            ++checked;
        }
    }
    CHECK(checked > 500);
}

TEST_CASE("q8_0 and q4_0 requantize llama.cpp's blocks to the same bytes") {
    // Dequantized, a q8_0/q4_0 block holds its scale times the extreme level, so ggml's quantizer
    // must find the same scale and levels again: any rounding difference from ggml shows up here.
    const auto q8 = vkllm::test::shared_path("fixtures/llama_q8_0/model.gguf");
    const auto q4 = vkllm::test::shared_path("fixtures/llama_q4_0/model.gguf");
    if (!q8 || !q4) return;
    for (const auto& path : {*q8, *q4}) {
        const File f = File::open(path);
        for (const Tensor& t : f.tensors()) {
            if (t.type != GgmlType::Q8_0 && t.type != GgmlType::Q4_0) continue;
            INFO(path.string() << " tensor " << t.name);
            const std::vector<std::byte> again = quantize(t.type, dequantize(t));
            CHECK(std::equal(again.begin(), again.end(), t.data.begin(), t.data.end()));
        }
    }
}

TEST_CASE("f16 tensors of the converter's f16 file are exactly its f32 tensors rounded to nearest even") {
    const auto f32_path = vkllm::test::shared_path("fixtures/convert/mistral3_hf/ref-f32.gguf");
    const auto f16_path = vkllm::test::shared_path("fixtures/convert/mistral3_hf/ref-f16.gguf");
    if (!f32_path || !f16_path) return;
    const File f32 = File::open(*f32_path);
    const File f16 = File::open(*f16_path);
    size_t compared = 0;
    for (const Tensor& half : f16.tensors()) {
        if (half.type != GgmlType::F16) continue;
        const Tensor& full = f32.tensor(half.name);
        REQUIRE(full.type == GgmlType::F32);
        INFO(half.name);
        const std::vector<std::byte> rounded = quantize(GgmlType::F16, dequantize(full));
        CHECK(std::equal(rounded.begin(), rounded.end(), half.data.begin(), half.data.end()));
        ++compared;
    }
    CHECK(compared > 0);
}
