// The ops of multi-head latent attention against their references: per-head products (attn_k_b,
// attn_v_b) for every weight type with strided layouts, and attention whose V is the latent prefix of
// each cached K row (the K cache bound as V with the K row as its stride).
#include <doctest/doctest.h>

#include <numeric>
#include <string>

#include "op_harness.h"
#include "ops/attention.h"
#include "ops/matvec_heads.h"
#include "ops/ref/attention_ref.h"
#include "ops/ref/matvec_heads_ref.h"

using namespace vkllm;

namespace {

struct HeadsCase {
    uint32_t rows, cols, n_head, n_tokens;
    ops::HeadLayout x, y;
};

// Every float of x and y that no layout names keeps its value: y starts as random values, so an
// out-of-layout write shows as a difference.
void check_matvec_heads(gguf::GgmlType type, const HeadsCase& c, uint64_t seed) {
    const test::HostWeights weights = test::random_weights(type, c.n_head * c.rows, c.cols, seed);
    const size_t x_count = size_t(c.n_tokens) * c.x.stride, y_count = size_t(c.n_tokens) * c.y.stride;
    const std::vector<float> x = test::random_floats(x_count, seed + 1);
    std::vector<float> want = test::random_floats(y_count, seed + 2);
    gpu::Buffer weight_buffer = test::upload_weights(test::device(), test::transfer(), weights);
    gpu::Buffer x_buffer = test::upload(x), y_buffer = test::upload(want);
    ref::matvec_heads(type, weights.blocks, c.rows, c.cols, c.n_head, c.n_tokens, x, c.x, want, c.y);
    test::OpGraph g;
    const ops::WeightMatrix matrix = g.weights(type, c.n_head * c.rows, c.cols, weight_buffer);
    g.run(ops::matvec_heads(test::device(), matrix, c.n_head, c.n_tokens, g(x_buffer), c.x, g(y_buffer), c.y));
    const std::string what = fmt::format("{} {} heads of {} x {}, {} tokens", gguf::type_name(type), c.n_head, c.rows,
                                         c.cols, c.n_tokens);
    test::check_close(test::download(y_buffer, y_count), want, test::f32_tolerance, seed, what.c_str());
}

}  // namespace

TEST_CASE("matvec_heads: each head's matrix on its slice of strided rows, every weight type") {
    uint64_t seed = test::base_seed() + 7100;
    for (gguf::GgmlType type : test::weight_types) {
        const uint32_t g = test::column_granularity(type);
        // attn_k_b-like: the no-RoPE head of q (stride nope + rope) into the latent part of Q's heads
        const uint32_t nope = 2 * g, rope = 16, latent = 70, heads = 3, tokens = 5;
        check_matvec_heads(type, {latent, nope, heads, tokens, {heads * (nope + rope) + 4, 0, nope + rope},
                                  {heads * (latent + rope) + 3, 1, latent + rope}}, seed++);
        // attn_v_b-like: packed heads, one token, rows past one workgroup
        check_matvec_heads(type, {130, 3 * g, 4, 1, {4 * 3 * g, 0, 3 * g}, {4 * 130, 0, 130}}, seed++);
    }
}

TEST_CASE("matvec_heads refuses what its kernel cannot take") {
    const test::HostWeights weights = test::random_weights(gguf::GgmlType::F32, 12, 8, 1);
    gpu::Buffer weight_buffer = test::upload_weights(test::device(), test::transfer(), weights);
    gpu::Buffer x = test::zero_buffer(4096), y = test::zero_buffer(4096);
    test::OpGraph g;
    const ops::WeightMatrix matrix = g.weights(gguf::GgmlType::F32, 12, 8, weight_buffer);
    auto run = [&](uint32_t n_head, ops::HeadLayout x_layout) {
        return ops::matvec_heads(test::device(), matrix, n_head, 2, g(x), x_layout, g(y), {12, 0, 4});
    };
    CHECK_NOTHROW(run(3, {24, 0, 8}));
    CHECK_THROWS_AS(run(5, {40, 0, 8}), Error);      // 12 rows over 5 heads
    CHECK_THROWS_AS(run(3, {24, 2, 8}), Error);      // input offset not a multiple of 4
    CHECK_THROWS_AS(run(3, {2000, 0, 8}), Error);    // past the input buffer
}

namespace {

// Absorbed MLA attention: one KV head whose row is [latent (R) | rope key], V = the latent. coopmat:
// prefill through the cooperative-matrix kernel of that shape.
void check_latent_attention(uint32_t n_head, uint32_t latent, uint32_t rope, ops::KvType kv_type, uint32_t n_cells,
                            std::vector<int32_t> positions, bool prefill, uint64_t seed,
                            std::optional<ops::CoopmatShape> coopmat = std::nullopt) {
    const uint32_t k_row = latent + rope, n_tokens = uint32_t(positions.size());
    const ops::AttentionConfig config{.n_head = n_head, .n_head_kv = 1, .head_dim_k = k_row, .head_dim_v = latent,
                                      .scale = 0.3f};
    const ops::AttentionShape shape{.n_tokens = n_tokens, .n_cells = n_cells, .kv_type = kv_type, .v_stride = k_row};
    if (prefill && !coopmat && !ops::attention_prefill_supports(test::device().caps(), config)) {  // as test_attention.cpp
        MESSAGE("latent " << latent << ": the prefill kernel does not fit this device: skipped");
        return;
    }
    const std::vector<float> q = test::random_floats(size_t(n_tokens) * n_head * k_row, seed, -1.0f, 1.0f);
    std::vector<int32_t> cells(n_cells);
    std::iota(cells.begin(), cells.end(), 0);
    std::vector<std::byte> cache(ops::kv_cache_bytes(kv_type, n_cells, k_row));
    ref::kv_write(kv_type, test::random_floats(size_t(n_cells) * k_row, seed + 1, -1.0f, 1.0f), cells, k_row, cache);

    const size_t out_count = size_t(n_tokens) * n_head * latent;
    const uint64_t scratch_bytes = prefill ? ops::attention_prefill_scratch_bytes(config, shape)
                                           : ops::attention_decode_scratch_bytes(config, shape);
    gpu::Buffer q_buffer = test::upload(q), k = test::upload_bytes(cache), scratch = test::zero_buffer(scratch_bytes);
    gpu::Buffer position_buffer = test::upload_values(std::span<const int32_t>(positions));
    gpu::Buffer out = test::upload(std::vector<float>(out_count, NAN));
    test::OpGraph g;
    const ops::AttentionBuffers buffers{g(q_buffer), g(k), g(k), g(position_buffer), g(out), g(scratch)};
    g.run(prefill ? ops::attention_prefill(test::device(), config, shape, buffers, 0, coopmat)
                  : ops::attention_decode(test::device(), config, shape, buffers));

    const std::vector<float> keys = ref::kv_read(kv_type, cache, k_row);
    std::vector<float> values(size_t(n_cells) * latent);
    for (uint32_t j = 0; j < n_cells; ++j)
        std::copy_n(&keys[size_t(j) * k_row], latent, &values[size_t(j) * latent]);
    std::vector<float> want(out_count);
    ref::attention(q, keys, values, positions, config, want);
    const bool float16 = prefill && (coopmat || test::device().caps().use_float16());
    const std::string what = fmt::format("{} heads, latent {} + rope {}, {} cells, {}{}", n_head, latent, rope, n_cells,
                                         prefill ? "prefill" : "decode", coopmat ? " on cooperative matrices" : "");
    test::check_close(test::download(out, out_count), want, float16 ? test::f16_tolerance : test::f32_tolerance, seed,
                      what.c_str());
}

std::vector<int32_t> consecutive(int32_t first, int32_t count) {
    std::vector<int32_t> positions(count);
    std::iota(positions.begin(), positions.end(), first);
    return positions;
}

}  // namespace

TEST_CASE("attention with V read from the latent prefix of the K cache (absorbed MLA)") {
    uint64_t seed = test::base_seed() + 7200;
    // the fixtures' shape; Mistral Small 4's (latent 256 + rope 64) with a q8_0 cache past one chunk
    check_latent_attention(4, 32, 16, ops::KvType::F16, 160, {159, 3}, false, seed++);
    check_latent_attention(4, 32, 16, ops::KvType::F16, 160, consecutive(0, 160), true, seed++);
    check_latent_attention(8, 256, 64, ops::KvType::Q8_0, 700, {699}, false, seed++);
    check_latent_attention(8, 256, 64, ops::KvType::F16, 300, consecutive(200, 67), true, seed++);
    // The fixtures' shape through the cooperative-matrix kernel (the device's or emulated), which takes
    // heads this small.
    if (const std::optional<ops::CoopmatShape> shape = test::coopmat_under_test())
        check_latent_attention(4, 32, 16, ops::KvType::F16, 90, consecutive(0, 90), true, seed++, shape);
}

TEST_CASE("attention refuses a V stride shorter than its heads") {
    const ops::AttentionConfig config{.n_head = 2, .n_head_kv = 1, .head_dim_k = 48, .head_dim_v = 32, .scale = 1.0f};
    gpu::Buffer any = test::zero_buffer(1 << 16);
    test::OpGraph g;
    const graph::Region r = g(any);
    const ops::AttentionBuffers buffers{r, r, r, r, r, r};
    for (uint32_t v_stride : {16u, 34u})
        CHECK_THROWS_AS(ops::attention_decode(test::device(), config, {1, 8, ops::KvType::F16, 0, v_stride}, buffers),
                        Error);
    CHECK_NOTHROW(ops::attention_decode(test::device(), config, {1, 8, ops::KvType::F16, 0, 48}, buffers));
}
