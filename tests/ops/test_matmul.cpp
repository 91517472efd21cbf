// matmul (prefill) on the GPU against the f64 reference, for every weight type: odd row and token
// counts (partial tiles), every tile shape, fp16 and fp32 arithmetic, long rows, 16384+ rows, split
// weight buffers, and the fused residual add.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdlib>

#include "gpu_fixture.h"
#include "op_harness.h"
#include "ops/ref/matmul_ref.h"
#include "weight_fixture.h"

using namespace vkllm;

namespace {

struct MatmulCase {
    gguf::GgmlType type;
    uint32_t rows, cols, n_tokens;
    bool accumulate = false;
    std::optional<ops::MatmulConfig> config = std::nullopt;
};

uint64_t case_seed(const MatmulCase& c) {
    return test::base_seed() ^ (uint64_t(c.type) << 56) ^ (uint64_t(c.rows) << 36) ^ (uint64_t(c.cols) << 12) ^
           c.n_tokens;
}

void check_matmul(gpu::Device& device, gpu::Transfer& transfer, const MatmulCase& c) {
    const uint64_t seed = case_seed(c);
    test::HostWeights weights = test::random_weights(c.type, c.rows, c.cols, seed);
    std::vector<float> x = test::random_floats(size_t(c.n_tokens) * c.cols, seed + 1);
    std::vector<float> y0 = test::random_floats(size_t(c.n_tokens) * c.rows, seed + 2);
    std::vector<float> want = y0;
    ref::matmul(c.type, weights.blocks, c.rows, c.cols, x, c.n_tokens, want, c.accumulate);
    gpu::Buffer weight_buffer = test::upload_weights(device, transfer, weights);
    std::vector<float> got =
        test::gpu_matmul(device, transfer, weights, weight_buffer, x, y0, c.n_tokens, c.accumulate, c.config);

    const ops::MatmulConfig used = c.config.value_or(ops::matmul_config(device.caps(), c.type));
    const bool float16 = used.float16 || used.coopmat;  // cooperative matrices multiply f16 tiles
    const double error = test::relative_error(got, want);
    INFO(fmt::format("{} {} x {} by {} tokens{} seed {}: tile {} x {}{}, {}, {} segments: relative error {:.3g}",
                     gguf::type_name(c.type), c.rows, c.cols, c.n_tokens, c.accumulate ? " accumulate" : "", seed,
                     used.tile_rows, used.tile_tokens, used.texel_reads ? " texel" : "",
                     used.coopmat ? "cooperative matrices" : used.float16 ? "fp16" : "fp32",
                     weight_buffer.segments().size(), error));
    CHECK(error <= (float16 ? test::f16_tolerance : test::f32_tolerance));
}

// The int8 path: quantize_q8 against ref::quantize_q8 (a value may land one step away where the
// device's 1 / d rounds differently, a scale one fp16 step), the products against the reference on
// the activations the GPU quantized (exact integer sums, so the f32 tolerance), and against the float
// activations within the rounding of the activations.
void check_matmul_int8(gpu::Device& device, gpu::Transfer& transfer, const MatmulCase& c) {
    const uint64_t seed = case_seed(c);
    test::HostWeights weights = test::random_weights(c.type, c.rows, c.cols, seed);
    std::vector<float> x = test::random_floats(size_t(c.n_tokens) * c.cols, seed + 1);
    std::vector<float> y0 = test::random_floats(size_t(c.n_tokens) * c.rows, seed + 2);
    gpu::Buffer weight_buffer = test::upload_weights(device, transfer, weights);
    const test::Int8Matmul got =
        test::gpu_matmul_int8(device, transfer, weights, weight_buffer, x, y0, c.n_tokens, c.accumulate, c.config);
    INFO(fmt::format("{} {} x {} by {} tokens{} seed {}, {} segments", gguf::type_name(c.type), c.rows, c.cols,
                     c.n_tokens, c.accumulate ? " accumulate" : "", seed, weight_buffer.segments().size()));

    const std::vector<uint32_t> want_int8 = ref::quantize_q8(x, c.cols);
    REQUIRE(got.x_int8.size() == want_int8.size());
    size_t scales_off = 0, steps_off = 0;
    int max_step = 0;
    for (size_t block = 0; block < want_int8.size(); block += 9) {
        const float got_d = std::bit_cast<float>(got.x_int8[block]), want_d = std::bit_cast<float>(want_int8[block]);
        // One fp16 step apart at most, where the device's max / 127 lands on the other side of a rounding.
        scales_off += std::fabs(got_d - want_d) > 0x1p-10f * std::fabs(want_d);
        for (size_t w = 1; w < 9; ++w)
            for (uint32_t shift = 0; shift < 32; shift += 8) {
                const int step = std::abs(int(int8_t(uint8_t(got.x_int8[block + w] >> shift))) -
                                          int(int8_t(uint8_t(want_int8[block + w] >> shift))));
                max_step = std::max(max_step, step);
                steps_off += step != 0;
            }
    }
    CHECK(scales_off == 0);
    CHECK(max_step <= 1);
    CHECK(steps_off * 1000 <= x.size());

    std::vector<float> want = y0;
    ref::matmul(c.type, weights.blocks, c.rows, c.cols, ref::dequantize_q8(got.x_int8), c.n_tokens, want, c.accumulate);
    CHECK(test::relative_error(got.y, want) <= test::f32_tolerance);
    std::vector<float> want_float = y0;
    ref::matmul(c.type, weights.blocks, c.rows, c.cols, x, c.n_tokens, want_float, c.accumulate);
    CHECK(test::relative_error(got.y, want_float) <= 1e-2);
}

}  // namespace

TEST_CASE("matmul with int8 activations: Q4_0 and Q8_0, partial and small tiles, long rows") {
    if (!test::device().caps().integer_dot_product) {
        MESSAGE("the device has no integer dot products: the int8 kernel is not built for it");
        return;
    }
    for (gguf::GgmlType type : {gguf::GgmlType::Q4_0, gguf::GgmlType::Q8_0}) {
        for (MatmulCase c : {MatmulCase{type, 64, 32, 4}, MatmulCase{type, 1, 160, 40}, MatmulCase{type, 37, 96, 70, true},
                             MatmulCase{type, 130, 64, 33}})
            check_matmul_int8(test::device(), test::transfer(), c);
        check_matmul_int8(test::device(), test::transfer(),
                          {type, 45, 64, 19, true, ops::MatmulConfig{.tile_rows = 16, .tile_tokens = 32, .int8_activations = true}});
        // 800 blocks a row: summed over two dispatches (the loop cap of matmul_body.glsl's units).
        check_matmul_int8(test::device(), test::transfer(), {type, 5, 25600, 3});
    }
}

TEST_CASE("matmul matches the reference for every weight type, partial tiles included") {
    const gpu::Capabilities& caps = test::device().caps();
    for (gguf::GgmlType type : test::weight_types) {
        const uint32_t g = test::column_granularity(type);
        // rows of one block; a single row; odd row and token counts; dense rows ending inside a unit
        for (MatmulCase c : {MatmulCase{type, 64, g, 4}, MatmulCase{type, 1, 5 * g, 40},
                             MatmulCase{type, 37, 3 * g, 5, true}, MatmulCase{type, 70, g == 4 ? 100 : 2 * g, 33}})
            check_matmul(test::device(), test::transfer(), c);
        // The other arithmetic variant of the FMA kernels where the device has both, whichever it prefers
        // (the cooperative-matrix kernel has one; where the selection takes it, the FMA kernel is what
        // VKLLM_COOPMAT=0 gives).
        gpu::Capabilities fma = caps;
        fma.cooperative_matrix_kernels = false;
        ops::MatmulConfig config = ops::matmul_config(fma, type);
        if (caps.use_float16() && ops::has_f16_variant(type)) {
            config.float16 = !config.float16;
            check_matmul(test::device(), test::transfer(), {type, 45, 3 * g, 11, true, config});
        }
    }
}

TEST_CASE("matmul gives the same result for every tile shape, both kernels, fp16 and fp32 arithmetic") {
    const gpu::Capabilities& caps = test::device().caps();
    // Shared-memory tiles, then the register tiles of the texel-read kernel (up to 8 tokens a lane).
    const std::vector<ops::MatmulConfig> tiles = {{.tile_rows = 16, .tile_tokens = 16},
                                                  {.tile_rows = 64, .tile_tokens = 32},
                                                  {.tile_rows = 32, .tile_tokens = 64},
                                                  {.tile_rows = 8, .tile_tokens = 1, .texel_reads = true},
                                                  {.tile_rows = 16, .tile_tokens = 3, .texel_reads = true},
                                                  {.tile_rows = 64, .tile_tokens = 8, .texel_reads = true}};
    // Tiles do not depend on the block format: a K-quant and a 2-byte aligned type stand for the rest.
    for (gguf::GgmlType type : {gguf::GgmlType::Q4_K, gguf::GgmlType::Q8_0}) {
        const uint32_t g = test::column_granularity(type);
        for (size_t i = 0; i < tiles.size(); ++i) {
            ops::MatmulConfig config = tiles[i];
            config.float16 = i != 1 && caps.use_float16() && ops::has_f16_variant(type);
            check_matmul(test::device(), test::transfer(), {type, 45, g == 4 ? 68 : g, 19, i == 1, config});
        }
    }
}

TEST_CASE("matmul over rows of 16384+ columns and over 16384+ rows") {
    for (gguf::GgmlType type : {gguf::GgmlType::BF16, gguf::GgmlType::Q5_0, gguf::GgmlType::Q6_K}) {
        check_matmul(test::device(), test::transfer(), {type, 5, 16384 + 256, 3});
        check_matmul(test::device(), test::transfer(), {type, 16411, test::column_granularity(type), 2, true});
    }
    // 262144 columns are 8192 units of about 14 loop iterations each, far past the 65535 after which
    // lavapipe silently stops a loop: the op sums such rows over several dispatches.
    check_matmul(test::device(), test::transfer(), {gguf::GgmlType::Q4_0, 5, 262144, 3});
    check_matmul(test::device(), test::transfer(), {gguf::GgmlType::Q4_K, 6, 65536, 2, true});
}

TEST_CASE("matmul over a weight buffer split into segments, one dispatch each") {
    setenv("VKLLM_MAX_BUFFER_RANGE", "4000", 1);
    gpu::Device device(test::instance());
    unsetenv("VKLLM_MAX_BUFFER_RANGE");
    gpu::Transfer transfer(device);
    // Single bindings hold at most 4000 bytes here, so x and y stay small.
    check_matmul(device, transfer, {gguf::GgmlType::Q5_0, 120, 64, 7});
    check_matmul(device, transfer, {gguf::GgmlType::Q5_K, 50, 256, 3, true});
    // Blocks fetched as the texels they span (dequant_common.glsl): segments of 117 Q8_0 rows of 34
    // bytes end 2 bytes into a word, of 111 Q4_0 rows of 36 bytes inside a texel.
    check_matmul(device, transfer, {gguf::GgmlType::Q8_0, 230, 32, 4});
    check_matmul(device, transfer, {gguf::GgmlType::Q4_0, 230, 64, 4, true});
    // The int8 kernel reads the same segments as storage-buffer words.
    if (device.caps().integer_dot_product) {
        check_matmul_int8(device, transfer, {gguf::GgmlType::Q8_0, 230, 32, 4});
        check_matmul_int8(device, transfer, {gguf::GgmlType::Q4_0, 230, 64, 4, true});
    }
}

// The cooperative-matrix kernel (ops/coopmat.h): the device's products where it has them, else the
// emulated build (the same tiling, staging and stores with each product in plain arithmetic). 2 x 2
// subgroups of 2 x 2 products, then (emulated) other shapes and subgroup grids. Row counts that are
// multiples of 4 take the direct stores for whole products, the rest and partial products go through
// shared memory; dense rows end inside a unit. Emulated products loop over their elements: rows stay
// within 16 units, under lavapipe's 65,535 loop iterations per invocation.
TEST_CASE("matmul on cooperative matrices: every weight type, partial tiles, both stores") {
    const std::optional<ops::CoopmatShape> shape = test::coopmat_under_test();
    if (!shape) return;
    const ops::MatmulConfig config = ops::coopmat_matmul_config(*shape);
    for (gguf::GgmlType type : test::weight_types) {
        const uint32_t g = test::column_granularity(type);
        for (MatmulCase c : {MatmulCase{type, 64, 2 * g, 40, false, config},
                             MatmulCase{type, 37, std::min(3 * g, 512u), 11, true, config},
                             MatmulCase{type, 36, g == 4 ? 100 : g, 5, true, config}})
            check_matmul(test::device(), test::transfer(), c);
    }
    // K steps of 4, 16 and 32 per unit; one subgroup along the rows, three along the tokens (products
    // only the emulated build takes).
    if (!shape->emulated) return;
    for (auto [m, n, k] : {std::array{4u, 8u, 4u}, std::array{8u, 4u, 16u}, std::array{12u, 8u, 32u}}) {
        ops::CoopmatShape other = *shape;
        other.m = m, other.n = n, other.k = k;
        const ops::MatmulConfig grid{.tile_rows = 2 * other.m, .tile_tokens = 3 * other.n, .coopmat = other,
                                     .subgroups_rows = 1, .subgroups_tokens = 3};
        for (gguf::GgmlType type : {gguf::GgmlType::Q4_K, gguf::GgmlType::Q8_0})
            check_matmul(test::device(), test::transfer(), {type, 52, 2 * test::column_granularity(type), 23, true, grid});
    }
}
