// Bit-for-bit parity with ggml itself: when VKLLM_GGML_BASE_LIB names a libggml-base.so (e.g. from
// the npm package @node-llama-cpp/linux-x64, the llama.cpp build the fixtures came from), every
// quantizer, dequantizer and scalar conversion here must produce exactly ggml's bytes and floats.
#include <doctest/doctest.h>
#include <dlfcn.h>
#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>

#include "gguf/quants.h"

using namespace vkllm::gguf;

namespace {

using QuantizeRow = void (*)(const float*, void*, int64_t);
using DequantizeRow = void (*)(const void*, float*, int64_t);
using ToHalf = uint16_t (*)(float);

// Rows that stress the rounding paths: gaussian, uniform, tiny and huge scales, zeros, outliers,
// constant runs and exact ties.
std::vector<float> stress_row(size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    std::vector<float> x(n);
    const int kind = int(seed % 7);
    const float scale = std::ldexp(1.0f, int(rng() % 40) - 20);
    for (size_t i = 0; i < n; ++i) {
        switch (kind) {
            case 0: x[i] = normal(rng) * scale; break;
            case 1: x[i] = uniform(rng) * scale; break;
            case 2: x[i] = (i % 64 < 32) ? 0.0f : normal(rng); break;
            case 3: x[i] = normal(rng) * (rng() % 50 == 0 ? 100.0f : 1.0f); break;
            case 4: x[i] = float(int(rng() % 33) - 16) * 0.5f; break;
            case 5: x[i] = (i % 16 == 0) ? normal(rng) : 0.25f; break;
            default: x[i] = std::fabs(normal(rng)) + 3.0f; break;
        }
    }
    return x;
}

}  // namespace

TEST_CASE("quantizers, dequantizers and scalar conversions match ggml bit for bit") {
    const char* library = std::getenv("VKLLM_GGML_BASE_LIB");
    if (!library) {
        MESSAGE("skipped: set VKLLM_GGML_BASE_LIB to a libggml-base.so to compare with ggml");
        return;
    }
    void* ggml = dlopen(library, RTLD_NOW | RTLD_LOCAL);
    REQUIRE_MESSAGE(ggml, dlerror());
    const auto symbol = [&](const std::string& name) {
        void* address = dlsym(ggml, name.c_str());
        REQUIRE_MESSAGE(address, "no symbol " << name);
        return address;
    };
    const GgmlType quantized[] = {GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q8_0,
                                  GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K};
    for (GgmlType type : quantized) {
        const auto quantize_ref = reinterpret_cast<QuantizeRow>(symbol(fmt::format("quantize_row_{}_ref", type_name(type))));
        const auto dequantize_ref = reinterpret_cast<DequantizeRow>(symbol(fmt::format("dequantize_row_{}", type_name(type))));
        for (uint32_t seed = 0; seed < 700; ++seed) {
            INFO(type_name(type) << " seed " << seed);
            const std::vector<float> x = stress_row(1024, seed);
            const std::vector<std::byte> ours = quantize(type, x);
            std::vector<std::byte> theirs(ours.size());
            quantize_ref(x.data(), theirs.data(), int64_t(x.size()));
            REQUIRE(ours == theirs);
            std::vector<float> y_ours(x.size()), y_theirs(x.size());
            dequantize(type, theirs, y_ours);
            dequantize_ref(theirs.data(), y_theirs.data(), int64_t(x.size()));
            REQUIRE(std::memcmp(y_ours.data(), y_theirs.data(), x.size() * 4) == 0);
        }
    }
    const auto to_f16 = reinterpret_cast<ToHalf>(symbol("ggml_fp32_to_fp16"));
    const auto to_bf16 = reinterpret_cast<ToHalf>(symbol("ggml_fp32_to_bf16"));
    std::mt19937 rng(11);
    for (int i = 0; i < 2000000; ++i) {
        const float f = std::bit_cast<float>(uint32_t(rng()));
        if (std::isnan(f)) continue;  // ggml's F16C path keeps NaN payloads; both stay NaN
        if (fp32_to_fp16(f) != to_f16(f) || fp32_to_bf16(f) != to_bf16(f)) FAIL("f32 bits " << std::bit_cast<uint32_t>(f));
    }
    dlclose(ggml);
}
