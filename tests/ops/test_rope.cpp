// RoPE and the attention temperature on the GPU against the double-precision references, at
// positions up to 10^6 (where an f32 angle would be off by a sizable fraction of a radian).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "op_harness.h"
#include "ops/ref/rope_ref.h"
#include "ops/rope.h"

using namespace vkllm;

namespace {

struct RopeCase {
    const char* name;
    ops::RopeConfig config;
    uint32_t n_tokens, n_head, head_dim, token_stride;
};

void check_rope(const RopeCase& c, uint64_t seed) {
    const std::string name = c.name;
    CAPTURE(name);
    const uint32_t stride = c.token_stride ? c.token_stride : c.n_head * c.head_dim;
    std::vector<float> x = test::random_floats(size_t(c.n_tokens) * stride, seed);
    std::vector<int32_t> positions = test::random_ints(c.n_tokens, seed + 1, 0, 1000000);
    positions[0] = 0;
    if (c.n_tokens > 1) positions[1] = 1;
    const std::vector<uint32_t> phases = ops::rope_phase_table(c.config);
    gpu::Buffer x_buffer = test::upload(x), phase_buffer = test::upload_values(std::span(phases));
    gpu::Buffer position_buffer = test::upload_values(std::span<const int32_t>(positions));
    const ops::RopeShape shape{.n_tokens = c.n_tokens, .n_head = c.n_head, .head_dim = c.head_dim,
                               .token_stride = c.token_stride};
    test::OpGraph g;
    g.run(ops::rope(test::device(), c.config, shape, g(phase_buffer), g(position_buffer), g(x_buffer)));
    // The reference works on packed heads: rotate those, and expect the gaps between tokens untouched.
    std::vector<float> heads(size_t(c.n_tokens) * c.n_head * c.head_dim), want = x;
    for (uint32_t t = 0; t < c.n_tokens; ++t)
        std::copy_n(&x[size_t(t) * stride], c.n_head * c.head_dim, &heads[size_t(t) * c.n_head * c.head_dim]);
    ref::rope(heads, c.head_dim, c.n_head, positions, c.config);
    for (uint32_t t = 0; t < c.n_tokens; ++t)
        std::copy_n(&heads[size_t(t) * c.n_head * c.head_dim], c.n_head * c.head_dim, &want[size_t(t) * stride]);
    test::check_close(test::download(x_buffer, x.size()), want, test::f32_tolerance, seed, c.name);
}

}  // namespace

TEST_CASE("rope: adjacent and NeoX pairs, partial dims, YaRN, frequency factors, strided tokens") {
    std::vector<float> llama3_factors(32);
    for (size_t i = 0; i < llama3_factors.size(); ++i) llama3_factors[i] = 1.0f + float(i % 9);
    const RopeCase cases[] = {
        {"normal", {.n_dims = 128, .freq_base = 10000.0f}, 7, 4, 128, 0},
        {"neox partial", {.n_dims = 64, .mode = ops::RopeMode::Neox, .freq_base = 5e6f}, 5, 3, 128, 0},
        {"yarn", {.n_dims = 64, .freq_base = 10000.0f, .freq_scale = 1.0f / 40, .ext_factor = 1.0f,
                  .attn_factor = 0.7f, .n_ctx_orig = 4096}, 9, 2, 64, 0},
        {"yarn neox betas", {.n_dims = 96, .mode = ops::RopeMode::Neox, .freq_base = 1e6f, .freq_scale = 0.125f,
                             .ext_factor = 1.0f, .beta_fast = 16.0f, .beta_slow = 2.0f, .n_ctx_orig = 8192},
         3, 5, 96, 0},
        {"linear + freq factors", {.n_dims = 64, .freq_base = 500000.0f, .freq_scale = 0.125f,
                                   .freq_factors = llama3_factors}, 4, 2, 64, 0},
        {"q view of fused qkv", {.n_dims = 32, .freq_base = 10000.0f}, 6, 3, 32, 3 * 32 + 2 * 2 * 32},
    };
    uint64_t seed = test::base_seed() + 600;
    for (const RopeCase& c : cases) check_rope(c, seed++);
}

TEST_CASE("attention temperature scaling: exact floor steps at multiples of the length") {
    const uint64_t seed = test::base_seed() + 700;
    const uint32_t row = 4100, floor_length = 8192;
    std::vector<int32_t> positions = {0, 8191, 8192, 16383, 16384, 3 * 8192, 1000000};
    const uint32_t n_tokens = uint32_t(positions.size());
    const std::vector<float> x = test::random_floats(size_t(n_tokens) * row, seed);
    gpu::Buffer x_buffer = test::upload(x), position_buffer = test::upload_values(std::span<const int32_t>(positions));
    test::OpGraph g;
    g.run(ops::attn_temp(test::device(), g(position_buffer), g(x_buffer), n_tokens, row, 0.1f, floor_length));
    std::vector<float> want = x;
    ref::attn_temp_scale(want, row, positions, 0.1f, floor_length);
    test::check_close(test::download(x_buffer, x.size()), want, test::f32_tolerance, seed, "attn_temp");
}
