// The vision encoders' ops against their references: LayerNorm, GELU, and the patch-grid regroupings
// (average pool, patch merger, row breaks), on odd sizes and in place where the op allows it.
#include <doctest/doctest.h>

#include "op_harness.h"
#include "ops/gelu.h"
#include "ops/layernorm.h"
#include "ops/patch_grid.h"
#include "ops/ref/vision_ref.h"

using namespace vkllm;

TEST_CASE("layernorm: rows of odd and wide sizes, offset inputs, in place") {
    const uint64_t seed = test::base_seed() + 9100;
    for (auto [n, rows] : {std::pair{1152u, 7u}, {37u, 5u}, {4096u, 3u}, {3u, 1u}}) {
        CAPTURE(n);
        const std::vector<float> x = test::random_floats(uint64_t(n) * rows, seed + n, -3.0f, 5.0f);
        const std::vector<float> w = test::random_floats(n, seed + n + 1), bias = test::random_floats(n, seed + n + 2);
        std::vector<float> want(x.size());
        ref::layernorm(x, w, bias, n, 1e-6f, want);
        gpu::Buffer xb = test::upload(x), wb = test::upload(w), bb = test::upload(bias), y = test::zero_buffer(x.size() * 4);
        test::OpGraph g;
        g.run(ops::layernorm(test::device(), g(xb), g(wb), g(bb), g(y), n, rows, 1e-6f));
        test::check_close(test::download(y, x.size()), want, test::f32_tolerance, seed, "layernorm");
        test::OpGraph in_place;
        in_place.run(
            ops::layernorm(test::device(), in_place(xb), in_place(wb), in_place(bb), in_place(xb), n, rows, 1e-6f));
        test::check_close(test::download(xb, x.size()), want, test::f32_tolerance, seed, "layernorm in place");
    }
}

TEST_CASE("gelu: saturated inputs and sizes off multiples of 4") {
    const uint64_t seed = test::base_seed() + 9200;
    for (uint32_t n : {1001u, 8u, 70001u}) {
        CAPTURE(n);
        std::vector<float> x = test::random_floats(n, seed + n, -12.0f, 12.0f);
        x[0] = -200.0f;  // e^(-2u) overflows to inf: the result must be -0, not NaN
        x[n - 1] = 200.0f;
        std::vector<float> want(n);
        ref::gelu(x, want);
        gpu::Buffer xb = test::upload(x), y = test::zero_buffer(n * 4);
        test::OpGraph g;
        g.run(ops::gelu(test::device(), g(xb), g(y), n));
        test::check_close(test::download(y, n), want, test::f32_tolerance, seed, "gelu");
    }
}

TEST_CASE("patch grids: 4x4 average pool, 2x2 merge and row breaks on non-square grids") {
    const uint64_t seed = test::base_seed() + 9300;
    for (auto [n_embd, nx, ny] : {std::tuple{5u, 8u, 12u}, {64u, 16u, 4u}, {3u, 4u, 4u}}) {
        CAPTURE(n_embd);
        CAPTURE(nx);
        const std::vector<float> x = test::random_floats(uint64_t(n_embd) * nx * ny, seed + nx * 7 + ny);
        gpu::Buffer xb = test::upload(x), out = test::zero_buffer((x.size() + uint64_t(ny) * n_embd) * 4);
        const ops::PatchGrid grid{n_embd, nx, ny};

        const std::vector<float> pooled = ref::avg_pool_2d(x, n_embd, nx, ny, 4);
        test::OpGraph pool;
        pool.run(ops::avg_pool_2d(test::device(), grid, 4, pool(xb), pool(out)));
        test::check_close(test::download(out, pooled.size()), pooled, test::f32_tolerance, seed, "avg_pool_2d");

        const std::vector<float> merged = ref::patch_merge(x, n_embd, nx, ny, 2);
        test::OpGraph merge;
        merge.run(ops::patch_merge(test::device(), grid, 2, merge(xb), merge(out)));
        CHECK(test::download(out, merged.size()) == merged);

        const std::vector<float> row_break = test::random_floats(n_embd, seed + 1);
        const std::vector<float> rows = ref::row_breaks(x, row_break, n_embd, nx, ny);
        gpu::Buffer breaks = test::upload(row_break);
        test::OpGraph breaks_between;
        breaks_between.run(
            ops::row_breaks(test::device(), grid, breaks_between(xb), breaks_between(breaks), breaks_between(out)));
        CHECK(test::download(out, rows.size()) == rows);
    }
    test::OpGraph g;
    gpu::Buffer in = test::zero_buffer(1024), out = test::zero_buffer(1024);
    CHECK_THROWS_AS(ops::avg_pool_2d(test::device(), {4, 6, 8}, 4, g(in), g(out)), Error);
}
