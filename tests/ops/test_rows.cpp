// Row-wise ops on the GPU against the references: RMSNorm, softmax, top-k and argmax. Each runs at
// least once on vocabulary-sized rows, where a kernel looping per row would pass lavapipe's loop cap.
#include <doctest/doctest.h>

#include "op_harness.h"
#include "ops/ref/rmsnorm_ref.h"
#include "ops/ref/softmax_ref.h"
#include "ops/rmsnorm.h"
#include "ops/softmax.h"
#include "ops/topk.h"

using namespace vkllm;

TEST_CASE("rmsnorm: whole rows and per-head rows, with and without a weight, in place") {
    struct Case {
        uint32_t n, rows;
        bool weight;
    };
    const uint64_t seed = test::base_seed() + 100;
    for (const Case c : {Case{4096, 3, true}, Case{4097, 2, false}, Case{128, 37, true}, Case{131101, 1, true},
                         Case{1, 5, true}, Case{250, 3, false}}) {
        CAPTURE(c.n);
        CAPTURE(c.rows);
        const std::vector<float> x = test::random_floats(size_t(c.n) * c.rows, seed + c.n, -3.0f, 2.0f);
        const std::vector<float> w = test::random_floats(c.n, seed + c.n + 1, 0.5f, 1.5f);
        gpu::Buffer x_buffer = test::upload(x), w_buffer = test::upload(w);
        gpu::Buffer y_buffer = test::zero_buffer(x.size() * 4);
        test::OpGraph g;
        g.run(ops::rmsnorm(test::device(), g(x_buffer), c.weight ? std::optional(g(w_buffer)) : std::nullopt,
                           g(y_buffer), c.n, c.rows, 1e-5f));
        std::vector<float> want(x.size());
        ref::rmsnorm(x, c.weight ? std::span<const float>(w) : std::span<const float>(), c.n, 1e-5f, want);
        test::check_close(test::download(y_buffer, x.size()), want, test::f32_tolerance, seed, "rmsnorm");
        test::OpGraph in_place;
        in_place.run(ops::rmsnorm(test::device(), in_place(x_buffer),
                                  c.weight ? std::optional(in_place(w_buffer)) : std::nullopt, in_place(x_buffer), c.n,
                                  c.rows, 1e-5f));
        test::check_close(test::download(x_buffer, x.size()), want, test::f32_tolerance, seed, "rmsnorm in place");
    }
}

TEST_CASE("rmsnorm of per-head rows in groups: q heads in place in fused QKV rows, others untouched") {
    const uint32_t head_dim = 36, n_head = 3, n_tokens = 5, row = (n_head + 2) * head_dim;  // q, k, v heads
    const uint64_t seed = test::base_seed() + 150;
    const std::vector<float> x = test::random_floats(size_t(n_tokens) * row, seed, -3.0f, 2.0f);
    const std::vector<float> w = test::random_floats(head_dim, seed + 1, 0.5f, 1.5f);
    gpu::Buffer x_buffer = test::upload(x), w_buffer = test::upload(w);
    test::OpGraph g;
    g.run(ops::rmsnorm_grouped(test::device(), g(x_buffer), g(w_buffer), g(x_buffer), head_dim, n_tokens * n_head,
                               1e-6f, n_head, row));
    std::vector<float> want = x;
    for (uint32_t t = 0; t < n_tokens; ++t) {
        const std::span<const float> q(&x[size_t(t) * row], n_head * head_dim);
        ref::rmsnorm(q, w, head_dim, 1e-6f, std::span(&want[size_t(t) * row], n_head * head_dim));
    }
    test::check_close(test::download(x_buffer, x.size()), want, test::f32_tolerance, seed, "rmsnorm grouped");
}

TEST_CASE("rmsnorm_qk_heads: q heads with one weight, k heads with another, v heads untouched, in place") {
    const uint32_t head_dim = 36, n_head = 3, n_head_kv = 2, n_tokens = 5;
    const uint32_t row = (n_head + 2 * n_head_kv) * head_dim;
    const uint64_t seed = test::base_seed() + 160;
    const std::vector<float> x = test::random_floats(size_t(n_tokens) * row, seed, -3.0f, 2.0f);
    const std::vector<float> q_w = test::random_floats(head_dim, seed + 1, 0.5f, 1.5f);
    const std::vector<float> k_w = test::random_floats(head_dim, seed + 2, -1.5f, -0.5f);
    gpu::Buffer x_buffer = test::upload(x), q_buffer = test::upload(q_w), k_buffer = test::upload(k_w);
    test::OpGraph g;
    g.run(ops::rmsnorm_qk_heads(test::device(), g(x_buffer), g(q_buffer), g(k_buffer), head_dim, n_head, n_head_kv,
                                n_tokens, row, 1e-6f));
    std::vector<float> want = x;
    for (uint32_t t = 0; t < n_tokens; ++t) {
        const size_t q0 = size_t(t) * row, k0 = q0 + n_head * head_dim;
        ref::rmsnorm(std::span(&x[q0], n_head * head_dim), q_w, head_dim, 1e-6f, std::span(&want[q0], n_head * head_dim));
        ref::rmsnorm(std::span(&x[k0], n_head_kv * head_dim), k_w, head_dim, 1e-6f,
                     std::span(&want[k0], n_head_kv * head_dim));
    }
    test::check_close(test::download(x_buffer, x.size()), want, test::f32_tolerance, seed, "rmsnorm_qk_heads");
}

TEST_CASE("rmsnorm_add: y += rmsnorm(x) * weight, rows of vec4 and odd lengths") {
    const uint64_t seed = test::base_seed() + 170;
    for (const auto& [n, rows] : {std::pair{1152u, 3u}, std::pair{37u, 4u}}) {
        CAPTURE(n);
        const std::vector<float> x = test::random_floats(size_t(n) * rows, seed + n, -3.0f, 2.0f);
        const std::vector<float> w = test::random_floats(n, seed + n + 1, 0.5f, 1.5f);
        const std::vector<float> y = test::random_floats(size_t(n) * rows, seed + n + 2, -1.0f, 1.0f);
        gpu::Buffer x_buffer = test::upload(x), w_buffer = test::upload(w), y_buffer = test::upload(y);
        test::OpGraph g;
        g.run(ops::rmsnorm_add(test::device(), g(x_buffer), g(w_buffer), g(y_buffer), n, rows, 1e-6f));
        std::vector<float> want(x.size());
        ref::rmsnorm(x, w, n, 1e-6f, want);
        for (size_t i = 0; i < want.size(); ++i) want[i] += y[i];
        test::check_close(test::download(y_buffer, y.size()), want, test::f32_tolerance, seed, "rmsnorm_add");
    }
    gpu::Buffer buffer = test::zero_buffer(64 * 4), w_buffer = test::zero_buffer(64 * 4);
    test::OpGraph g;
    CHECK_THROWS_WITH_AS(ops::rmsnorm_add(test::device(), g(buffer), g(w_buffer), g(buffer), 64, 1, 1e-6f),
                         doctest::Contains("overlap"), Error);
}

TEST_CASE("softmax: rows from a few experts to a vocabulary, scaled") {
    struct Case {
        uint32_t n, rows;
        float scale;
    };
    const uint64_t seed = test::base_seed() + 200;
    for (const Case c : {Case{8, 17, 1.0f}, Case{5, 3, 0.3f}, Case{32000, 2, 1.0f}, Case{128259, 1, 2.0f}}) {
        CAPTURE(c.n);
        const std::vector<float> x = test::random_floats(size_t(c.n) * c.rows, seed + c.n, -20.0f, 20.0f);
        gpu::Buffer x_buffer = test::upload(x), y_buffer = test::zero_buffer(x.size() * 4);
        test::OpGraph g;
        g.run(ops::softmax(test::device(), g(x_buffer), g(y_buffer), c.n, c.rows, c.scale));
        std::vector<float> want(x.size());
        ref::softmax(x, c.n, c.scale, want);
        test::check_close(test::download(y_buffer, x.size()), want, test::f32_tolerance, seed, "softmax");
    }
}

TEST_CASE("top-k and argmax: exact indices and values, ties to the lower index, one pass or two") {
    struct Case {
        uint32_t n, rows, k;
    };
    const uint64_t seed = test::base_seed() + 300;
    for (const Case c : {Case{128256, 2, 1}, Case{32000, 3, 40}, Case{256, 5, 8}, Case{131101, 1, 128},
                         Case{7, 4, 7}, Case{4096, 1, 1}}) {
        CAPTURE(c.n);
        CAPTURE(c.k);
        std::vector<float> x = test::random_floats(size_t(c.n) * c.rows, seed + c.n, -10.0f, 10.0f);
        for (uint32_t row = 0; row < c.rows; ++row) {  // a three-way tie for first, across chunks
            float* values = &x[size_t(row) * c.n];
            values[c.n - 1] = values[c.n / 2] = values[c.n / 3] = 11.0f;
        }
        const ops::TopKShape shape{.n = c.n, .n_rows = c.rows, .k = c.k};
        gpu::Buffer x_buffer = test::upload(x), scratch = test::zero_buffer(shape.scratch_bytes());
        gpu::Buffer values = test::zero_buffer(size_t(c.rows) * c.k * 4), indices = test::zero_buffer(size_t(c.rows) * c.k * 4);
        test::OpGraph g;
        g.run(ops::top_k(test::device(), shape, g(x_buffer), g(values), g(indices), g(scratch)));
        const ref::TopK want = ref::top_k(x, c.n, c.k);
        INFO("seed ", seed);
        CHECK(test::download_values<uint32_t>(indices, want.indices.size()) == want.indices);
        CHECK(test::download(values, want.values.size()) == want.values);
    }
}
