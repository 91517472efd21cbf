// matvec (decode) on the GPU against the f64 reference, for every weight type: odd shapes, every
// launch shape (one row per invocation, subgroup teams, teams spanning subgroups), rows long enough to
// pass lavapipe's loop cap, 16384+ rows, split weight buffers, the fused residual add, and small
// batches of up to 8 vectors (matvec_batch). GPU configurations (device profiles, VKLLM_TEXEL_READS=0)
// run the slice kernels, lavapipe's default the unit ones.
#include <doctest/doctest.h>

#include <cstdlib>

#include "gpu_fixture.h"
#include "op_harness.h"
#include "ops/ref/matmul_ref.h"
#include "weight_fixture.h"

using namespace vkllm;

namespace {

struct MatvecCase {
    gguf::GgmlType type;
    uint32_t rows, cols;
    bool accumulate = false;
    std::optional<ops::MatvecConfig> config = std::nullopt;
    uint32_t n_tokens = 1;
};

uint64_t case_seed(const MatvecCase& c) {
    return test::base_seed() ^ (uint64_t(c.type) << 56) ^ (uint64_t(c.rows) << 28) ^ c.cols ^ (uint64_t(c.n_tokens) << 20);
}

// Runs one case on `device` and checks ||gpu - ref|| / ||ref|| against the tolerance of the
// arithmetic the chosen pipeline uses.
void check_matvec(gpu::Device& device, gpu::Transfer& transfer, const MatvecCase& c) {
    const uint64_t seed = case_seed(c);
    test::HostWeights weights = test::random_weights(c.type, c.rows, c.cols, seed);
    std::vector<float> x = test::random_floats(size_t(c.n_tokens) * c.cols, seed + 1);
    std::vector<float> y0 = test::random_floats(size_t(c.n_tokens) * c.rows, seed + 2);
    std::vector<float> want = y0;
    ref::matmul(c.type, weights.blocks, c.rows, c.cols, x, c.n_tokens, want, c.accumulate);
    gpu::Buffer weight_buffer = test::upload_weights(device, transfer, weights);
    std::vector<float> got =
        test::gpu_matvec(device, transfer, weights, weight_buffer, x, y0, c.accumulate, c.config, c.n_tokens);

    const ops::MatvecConfig used = c.config.value_or(ops::matvec_config(device.caps(), c.type, c.cols, c.n_tokens));
    const double error = test::relative_error(got, want);
    INFO(fmt::format("{} {} x {}{}, {} tokens, seed {}: workgroup {}, {} threads/row, {} rows/team, {}, {} segments: "
                     "relative error {:.3g}",
                     gguf::type_name(c.type), c.rows, c.cols, c.accumulate ? " accumulate" : "", c.n_tokens, seed,
                     used.workgroup_size, used.threads_per_row, used.rows_per_team, used.float16 ? "fp16" : "fp32",
                     weight_buffer.segments().size(), error));
    CHECK(error <= (used.float16 ? test::f16_tolerance : test::f32_tolerance));
}

}  // namespace

TEST_CASE("matvec matches the reference for every weight type, odd shapes included") {
    const gpu::Capabilities& caps = test::device().caps();
    for (gguf::GgmlType type : test::weight_types) {
        const uint32_t g = test::column_granularity(type);
        // rows of one block; odd row counts; dense rows ending inside a 32-value unit or an 8-value slice
        // (rows 8-byte aligned) and dense rows starting 16-byte aligned (8 columns); 16384+ columns
        for (MatvecCase c : {MatvecCase{type, 64, g}, MatvecCase{type, 37, 3 * g, true},
                             MatvecCase{type, 67, g == 4 ? 100 : 5 * g}, MatvecCase{type, 29, 8 * g},
                             MatvecCase{type, 5, 16384 + 2 * g, true}})
            check_matvec(test::device(), test::transfer(), c);
        // A single row is a single dot product, whose relative error only fp32 bounds reliably: fp16
        // rounding errors are judged over many outputs.
        ops::MatvecConfig config = ops::matvec_config(caps, type, 7 * g);
        config.float16 = false;
        check_matvec(test::device(), test::transfer(), {type, 1, 7 * g, true, config});
        // The fp16 variant where the device has it, whichever variant the device prefers.
        config.float16 = caps.use_float16() && ops::has_f16_variant(type);
        check_matvec(test::device(), test::transfer(), {type, 64, 7 * g, false, config});
    }
}

TEST_CASE("matvec gives the same result for every launch shape, fp16 and fp32 arithmetic") {
    const gpu::Capabilities& caps = test::device().caps();
    const uint32_t subgroup = std::max(caps.max_subgroup_size, caps.subgroup_size);
    const std::vector<ops::MatvecConfig> shapes = {
        {.workgroup_size = 16, .threads_per_row = 1, .rows_per_team = 3},                  // row per lane
        {.workgroup_size = 8, .threads_per_row = 1, .rows_per_team = 8},
        {.workgroup_size = 2 * subgroup, .threads_per_row = subgroup, .rows_per_team = 4},  // subgroup teams
        {.workgroup_size = 4 * subgroup, .threads_per_row = 4 * subgroup, .rows_per_team = 1},  // via shared memory
        {.workgroup_size = 8 * subgroup, .threads_per_row = 2 * subgroup, .rows_per_team = 2},
        {.workgroup_size = 4 * subgroup, .threads_per_row = 2 * subgroup, .rows_per_team = 7},
    };
    // Launch shapes do not depend on the block format: 2-byte aligned blocks, blocks with a bias,
    // four scale groups per unit, and a dense type stand for the rest.
    using enum gguf::GgmlType;
    for (gguf::GgmlType type : {Q4_0, Q5_1, Q6_K, F16}) {
        const uint32_t g = test::column_granularity(type);
        for (size_t i = 0; i < shapes.size(); ++i) {
            ops::MatvecConfig config = shapes[i];
            // Alternate the fp16 variant and its fp32 fallback, so both run whatever VKLLM_DISABLE_F16 says.
            config.float16 = i % 2 == 0 && caps.use_float16() && ops::has_f16_variant(type);
            check_matvec(test::device(), test::transfer(), {type, 61, (g == 4 ? 36 : 7 * g), i % 2 == 1, config});
        }
    }
}

// Each token's result must match its own product: tokens land in their own rows of y (a split buffer's
// later segments included), with every launch shape's reduction.
TEST_CASE("matvec over small batches of vectors, every weight type and launch shape") {
    const gpu::Capabilities& caps = test::device().caps();
    for (gguf::GgmlType type : test::weight_types) {
        const uint32_t g = test::column_granularity(type);
        for (uint32_t n_tokens : {2u, 3u, ops::matvec_max_tokens})  // dense rows of 8 columns start 16-byte aligned
            check_matvec(test::device(), test::transfer(),
                         {type, 37, (n_tokens == 2 ? 8 : 3) * g, n_tokens == 3, std::nullopt, n_tokens});
    }
    const uint32_t subgroup = std::max(caps.max_subgroup_size, caps.subgroup_size);
    using enum gguf::GgmlType;
    for (ops::MatvecConfig config : {ops::MatvecConfig{.workgroup_size = 16, .threads_per_row = 1, .rows_per_team = 3},
                                     ops::MatvecConfig{.workgroup_size = 2 * subgroup, .threads_per_row = subgroup,
                                                       .rows_per_team = 2},
                                     ops::MatvecConfig{.workgroup_size = 4 * subgroup, .threads_per_row = 4 * subgroup,
                                                       .rows_per_team = 1}})
        for (gguf::GgmlType type : {Q4_0, Q8_0, F16}) {
            config.float16 = caps.use_float16() && ops::has_f16_variant(type);
            check_matvec(test::device(), test::transfer(), {type, 61, 7 * test::column_granularity(type), true, config, 5});
        }
    setenv("VKLLM_MAX_BUFFER_RANGE", "4000", 1);
    gpu::Device split_device(test::instance());
    unsetenv("VKLLM_MAX_BUFFER_RANGE");
    gpu::Transfer split_transfer(split_device);
    check_matvec(split_device, split_transfer, {Q8_0, 100, 96, true, std::nullopt, 8});
}

TEST_CASE("matvec splits rows that would loop past lavapipe's cap over more invocations") {
    // 2240000 columns are 70000 units of 32: one invocation per row would loop 70000 times, and
    // lavapipe silently stops a loop after 65535 (seen here: a relative error of 0.2 without the
    // split), so the op must spread each row over 128 lanes.
    const ops::MatvecConfig one_per_row{.workgroup_size = 8, .threads_per_row = 1, .rows_per_team = 2};
    for (gguf::GgmlType type : {gguf::GgmlType::F16, gguf::GgmlType::Q4_0})
        check_matvec(test::device(), test::transfer(),
                     {type, 3, 70000 * 32, type == gguf::GgmlType::Q4_0, one_per_row});
    // Rows of 40960 columns with the device's own launch shape.
    check_matvec(test::device(), test::transfer(), {gguf::GgmlType::Q8_0, 5, 40960, true});
}

TEST_CASE("matvec over 16384+ rows") {
    for (gguf::GgmlType type : {gguf::GgmlType::F32, gguf::GgmlType::Q5_1, gguf::GgmlType::Q4_K})
        check_matvec(test::device(), test::transfer(), {type, 16411, test::column_granularity(type)});
}

TEST_CASE("matvec over a weight buffer split into segments, one dispatch each") {
    setenv("VKLLM_MAX_BUFFER_RANGE", "4000", 1);
    gpu::Device device(test::instance());
    unsetenv("VKLLM_MAX_BUFFER_RANGE");
    gpu::Transfer transfer(device);
    // Q8_0 rows of 3 blocks are 102 bytes: segments end 2 bytes into a word. Q6_K rows are 210 bytes.
    check_matvec(device, transfer, {gguf::GgmlType::Q8_0, 200, 96});
    check_matvec(device, transfer, {gguf::GgmlType::Q6_K, 61, 256, true});
    check_matvec(device, transfer, {gguf::GgmlType::F16, 90, 100});
}

TEST_CASE("matvec refuses weights and buffers it cannot take") {
    gpu::Device& device = test::device();
    gpu::Buffer buffer = device.allocator().create(4096, gpu::MemoryDomain::Device);
    test::OpGraph g;
    const graph::Region range = g(buffer);
    auto attempt = [&](gguf::GgmlType type, uint32_t rows, uint32_t cols) {
        return ops::matvec(device, g.weights(type, rows, cols, buffer), range, range, false);
    };
    CHECK_THROWS_WITH_AS(attempt(gguf::GgmlType::Q4_0, 4, 48), doctest::Contains("multiple of 32"), Error);
    CHECK_THROWS_WITH_AS(attempt(gguf::GgmlType::F16, 4, 6), doctest::Contains("multiple of 4"), Error);
    CHECK_THROWS_WITH_AS(attempt(gguf::GgmlType::Q2_K, 4, 256), doctest::Contains("no kernel for q2_K"), Error);
    CHECK_THROWS_WITH_AS(attempt(gguf::GgmlType::Q8_0, 200, 32), doctest::Contains("cannot hold 200 rows"), Error);
    CHECK_THROWS_WITH_AS(
        ops::matvec(device, g.weights(gguf::GgmlType::F32, 2, 512, buffer), range.sub(0, 64), range, false),
        doctest::Contains("need x of 2048 bytes"), Error);
    CHECK_THROWS_WITH_AS(ops::matvec_batch(device, g.weights(gguf::GgmlType::F32, 4, 4, buffer), range, range,
                                           ops::matvec_max_tokens + 1, false),
                         doctest::Contains("vectors at once"), Error);
    const uint32_t too_many_rows = ops::matvec_max_rows_per_team + 1;
    for (ops::MatvecConfig bad : {ops::MatvecConfig{.workgroup_size = 8, .threads_per_row = 3},
                                  ops::MatvecConfig{.workgroup_size = 8, .threads_per_row = 0},
                                  ops::MatvecConfig{.workgroup_size = 8, .threads_per_row = 1, .rows_per_team = too_many_rows}})
        CHECK_THROWS_AS(ops::matvec(device, g.weights(gguf::GgmlType::F32, 4, 4, buffer), range, range, false, bad),
                        Error);
}
