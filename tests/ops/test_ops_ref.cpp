// The references themselves, on cases worked out by hand (no GPU): they are what every GPU op is
// measured against, so they must not share its mistakes.
#include <doctest/doctest.h>

#include <cmath>
#include <numbers>
#include <vector>

#include "gguf/quants.h"
#include "ops/ref/attention_ref.h"
#include "ops/ref/elementwise_ref.h"
#include "ops/ref/embed_ref.h"
#include "ops/ref/rmsnorm_ref.h"
#include "ops/ref/rope_ref.h"
#include "ops/ref/softmax_ref.h"

using namespace vkllm;
using doctest::Approx;

TEST_CASE("ref rmsnorm: a constant row normalizes to its sign, times the weight") {
    std::vector<float> x = {-3, -3, -3, -3, 2, 2, 2, 2}, w = {1, 2, 3, 4}, y(8);
    ref::rmsnorm(x, w, 4, 0.0f, y);
    CHECK(y == std::vector<float>{-1, -2, -3, -4, 1, 2, 3, 4});
    ref::rmsnorm(x, {}, 4, 7.0f, y);  // eps adds to the mean square: 9 + 7 = 16
    CHECK(y[0] == Approx(-0.75));
}

TEST_CASE("ref elementwise: add repeats its second operand, activations at known points") {
    std::vector<float> a = {1, 2, 3, 4, 5, 6}, b = {10, 20}, y(6);
    ref::add(a, b, y);
    CHECK(y == std::vector<float>{11, 22, 13, 24, 15, 26});
    ref::scale(a, -0.5f, y);
    CHECK(y[5] == -3.0f);
    std::vector<float> gate = {0.0f, 1.0f, 40.0f, -40.0f}, up = {3, 3, 2, 2}, out(4);
    ref::swiglu(gate, up, out);
    CHECK(out[0] == 0.0f);
    CHECK(out[1] == Approx(3.0 / (1.0 + std::exp(-1.0))));
    CHECK(out[2] == Approx(80.0));
    CHECK(std::fabs(out[3]) < 1e-12);
    ref::geglu(gate, up, out);
    CHECK(out[0] == 0.0f);
    CHECK(out[1] == Approx(3.0 * 0.8411919906));  // gelu_tanh(1)
    CHECK(out[2] == Approx(80.0));
    CHECK(out[3] == 0.0f);
}

TEST_CASE("ref softmax, argmax and top-k: sums to one, ties go to the lower index") {
    std::vector<float> x = {1, 3, 3, -2, 0, 5, 5, 5}, y(8);
    ref::softmax(x, 4, 2.0f, y);
    CHECK(y[0] + y[1] + y[2] + y[3] == Approx(1.0));
    CHECK(y[1] == Approx(1.0 / (2.0 + std::exp(-4.0) + std::exp(-10.0))));
    CHECK(ref::argmax(x, 4) == std::vector<uint32_t>{1, 1});
    ref::TopK top = ref::top_k(x, 4, 3);
    CHECK(top.indices == std::vector<uint32_t>{1, 2, 0, 1, 2, 3});
    CHECK(top.values == std::vector<float>{3, 3, 1, 5, 5, 5});
}

TEST_CASE("ref rope: pair i turns by pos * base^(-2i/n_dims); adjacent and NeoX pairing; partial dims") {
    ops::RopeConfig config{.n_dims = 4, .freq_base = 100.0f};
    // One head of 6: pairs turn at 1 and 1/10 radian per position; dims 4 and 5 pass through.
    std::vector<float> x = {1, 0, 1, 0, 7, 8};
    ref::rope(x, 6, 1, std::vector<int32_t>{3}, config);
    CHECK(x[0] == Approx(std::cos(3.0)));
    CHECK(x[1] == Approx(std::sin(3.0)));
    CHECK(x[2] == Approx(std::cos(0.3)));
    CHECK(x[3] == Approx(std::sin(0.3)));
    CHECK(x[4] == 7.0f);
    CHECK(x[5] == 8.0f);
    config.mode = ops::RopeMode::Neox;  // pairs (0, 2) and (1, 3)
    x = {1, 1, 0, 0, 7, 8};
    ref::rope(x, 6, 1, std::vector<int32_t>{3}, config);
    CHECK(x[0] == Approx(std::cos(3.0)));
    CHECK(x[2] == Approx(std::sin(3.0)));
    CHECK(x[1] == Approx(std::cos(0.3)));
    CHECK(x[3] == Approx(std::sin(0.3)));
}

TEST_CASE("ref rope: YaRN corrections (ggml_rope_yarn_corr_dims) and its magnitude scale") {
    ops::RopeConfig config{.n_dims = 128, .freq_base = 10000.0f, .freq_scale = 0.25f, .ext_factor = 1.0f,
                           .n_ctx_orig = 4096};
    // n_dims ln(n_ctx_orig / (2 pi beta)) / (2 ln base): 20.94 for beta 32, 45.03 for beta 1.
    ops::RopeCorrDims corr = ops::rope_corr_dims(config);
    CHECK(corr.lo == 20.0f);
    CHECK(corr.hi == 46.0f);
    // Pair 0 (below corr_lo) extrapolates: angle pos * 1; the last pair interpolates: pos * f * 0.25.
    std::vector<float> x(128, 0.0f);
    x[0] = 1.0f;
    x[126] = 1.0f;
    ref::rope(x, 128, 1, std::vector<int32_t>{5}, config);
    const double mscale = 1.0 + 0.1 * std::log(4.0);
    CHECK(x[0] == Approx(std::cos(5.0) * mscale));
    CHECK(x[1] == Approx(std::sin(5.0) * mscale));
    const double last = 5.0 * std::pow(10000.0, -126.0 / 128.0) * 0.25;
    CHECK(x[126] == Approx(std::cos(last) * mscale));
    CHECK(x[127] == Approx(std::sin(last) * mscale));
}

TEST_CASE("ref attention temperature: steps up exactly at multiples of the floor length") {
    std::vector<float> x = {2, 2, 2, 2, 2, 2};
    ref::attn_temp_scale(x, 2, std::vector<int32_t>{8191, 8192, 3 * 8192}, 0.5f, 8192);
    CHECK(x[0] == 2.0f);
    CHECK(x[2] == Approx(2.0 * (1.0 + 0.5 * std::log(2.0))));
    CHECK(x[5] == Approx(2.0 * (1.0 + 0.5 * std::log(4.0))));
}

TEST_CASE("ref KV cache: f16 keeps f16 values exactly, q8_0 errs by at most half a step") {
    std::vector<float> rows = {0.5f, -1.25f, 3.0f, 1024.0f};
    std::vector<std::byte> cache(ops::kv_cache_bytes(ops::KvType::F16, 3, 2));
    ref::kv_write(ops::KvType::F16, rows, std::vector<int32_t>{2, 0}, 2, cache);
    CHECK(ref::kv_read(ops::KvType::F16, cache, 2) == std::vector<float>{3.0f, 1024.0f, 0, 0, 0.5f, -1.25f});

    std::vector<float> block(64);
    for (size_t i = 0; i < block.size(); ++i) block[i] = float(i % 32) - 12.5f + (i >= 32 ? 100.0f : 0.0f);
    std::vector<std::byte> q8(ops::kv_cache_bytes(ops::KvType::Q8_0, 2, 64));
    ref::kv_write(ops::KvType::Q8_0, block, std::vector<int32_t>{1}, 64, q8);
    std::vector<float> back = ref::kv_read(ops::KvType::Q8_0, q8, 64);
    for (size_t i = 0; i < 64; ++i) {
        const double step = (i < 32 ? 18.5 : 118.5) / 127.0;
        CHECK(std::fabs(back[64 + i] - block[i]) <= step * 0.5 + 1e-3 * step);
        CHECK(back[i] == 0.0f);
    }
}

TEST_CASE("ref attention: one visible key returns its value; equal logits average; the window cuts") {
    ops::AttentionConfig config{.n_head = 2, .n_head_kv = 1, .head_dim_k = 2, .head_dim_v = 2, .scale = 1.0f};
    const std::vector<float> q = {1, 0, 0, 1};
    const std::vector<float> k = {0, 0, 0, 0, 5, 5}, v = {1, 2, 3, 4, 5, 6};
    std::vector<float> out(4);
    ref::attention(q, k, v, std::vector<int32_t>{0}, config, out);
    CHECK(out == std::vector<float>{1, 2, 1, 2});
    ref::attention(q, k, v, std::vector<int32_t>{1}, config, out);  // two equal logits
    CHECK(out == std::vector<float>{2, 3, 2, 3});
    config.n_swa = 1;
    ref::attention(q, k, v, std::vector<int32_t>{2}, config, out);
    CHECK(out == std::vector<float>{5, 6, 5, 6});
    config.n_swa = 0;
    config.softcap = 1.0f;  // logits 5 and 0, 0 capped to tanh(5) and 0
    ref::attention(q, k, v, std::vector<int32_t>{2}, config, out);
    const double p = std::exp(std::tanh(5.0)) / (2.0 + std::exp(std::tanh(5.0)));
    CHECK(out[0] == Approx(p * 5 + (1 - p) / 2 * (1 + 3)));
}

TEST_CASE("ref get_rows: dequantized rows, zeros for ids outside the weight") {
    std::vector<float> values(3 * 32);
    for (size_t i = 0; i < values.size(); ++i) values[i] = float(i) / 8.0f - 5.0f;
    std::vector<std::byte> q8 = gguf::quantize(gguf::GgmlType::Q8_0, values);
    std::vector<float> rows(3 * 32), want(32);
    ref::get_rows(gguf::GgmlType::Q8_0, q8, 32, std::vector<int32_t>{2, -1, 3}, rows);
    gguf::dequantize(gguf::GgmlType::Q8_0, std::span(q8).subspan(2 * 34, 34), want);
    CHECK(std::vector<float>(rows.begin(), rows.begin() + 32) == want);
    for (size_t i = 32; i < rows.size(); ++i) CHECK(rows[i] == 0.0f);
}
