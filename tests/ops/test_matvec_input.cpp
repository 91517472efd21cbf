// matvec with its input formed in the kernel (ops::MatvecInput): the RMSNorm before a projection and
// the GLU activation before a down projection, against the separate references run in turn
// (ref::rmsnorm or ref::swiglu / ref::geglu, then ref::matmul), for every weight type and launch shape;
// and the GLU as the output of the gate/up projection (ops::matvec_glu).
#include <doctest/doctest.h>

#include "gpu_fixture.h"
#include "op_harness.h"
#include "ops/ref/elementwise_ref.h"
#include "ops/ref/matmul_ref.h"
#include "ops/ref/rmsnorm_ref.h"
#include "weight_fixture.h"

using namespace vkllm;
using Kind = ops::MatvecInput::Kind;

namespace {

struct InputCase {
    Kind kind;
    gguf::GgmlType type;
    uint32_t rows, cols;
    bool accumulate = false;
    std::optional<ops::MatvecConfig> config = std::nullopt;
};

constexpr float eps = 1e-5f;

gpu::Buffer upload(gpu::Device& device, gpu::Transfer& transfer, std::span<const float> values) {
    gpu::Buffer buffer = device.allocator().create(values.size_bytes(), gpu::MemoryDomain::Device);
    transfer.upload(buffer, values);
    transfer.flush();
    return buffer;
}

// The vector the kernel should multiply: the reference op applied to x.
std::vector<float> reference_input(Kind kind, std::span<const float> x, std::span<const float> norm_weight,
                                   uint32_t cols) {
    std::vector<float> in(cols);
    if (kind == Kind::RmsNorm) ref::rmsnorm(x, norm_weight, cols, eps, in);
    if (kind == Kind::SwiGlu) ref::swiglu(x.first(cols), x.subspan(cols, cols), in);
    if (kind == Kind::GeGlu) ref::geglu(x.first(cols), x.subspan(cols, cols), in);
    return in;
}

void check_input(gpu::Device& device, gpu::Transfer& transfer, const InputCase& c) {
    const uint64_t seed = test::base_seed() ^ (uint64_t(c.kind) << 60) ^ (uint64_t(c.type) << 48) ^
                          (uint64_t(c.rows) << 24) ^ c.cols;
    const bool glu = c.kind == Kind::SwiGlu || c.kind == Kind::GeGlu;
    test::HostWeights weights = test::random_weights(c.type, c.rows, c.cols, seed);
    // x away from unit scale, so that a missing or doubled norm shows.
    std::vector<float> x = test::random_floats(glu ? 2 * c.cols : c.cols, seed + 1, -3.0f, 3.0f);
    std::vector<float> norm_weight = test::random_floats(c.cols, seed + 2, 0.5f, 1.5f);
    std::vector<float> y0 = test::random_floats(c.rows, seed + 3);

    std::vector<float> want = y0;
    ref::matmul(c.type, weights.blocks, c.rows, c.cols, reference_input(c.kind, x, norm_weight, c.cols), 1, want,
                c.accumulate);

    gpu::Buffer weight_buffer = test::upload_weights(device, transfer, weights);
    gpu::Buffer x_buffer = upload(device, transfer, x), norm_buffer = upload(device, transfer, norm_weight);
    gpu::Buffer y_buffer = upload(device, transfer, y0);
    test::OpGraph g(device);
    ops::MatvecInput input{.kind = c.kind, .x = g(x_buffer)};
    if (c.kind == Kind::RmsNorm) input = ops::MatvecInput::rms_norm(g(x_buffer), g(norm_buffer), eps);
    g.run(ops::matvec(device, g.weights(c.type, c.rows, c.cols, weight_buffer), input, g(y_buffer), c.accumulate,
                      c.config));
    std::vector<float> got(c.rows);
    transfer.readback(y_buffer, std::span(got));

    const ops::MatvecConfig used = c.config.value_or(ops::matvec_config(device.caps(), c.type, c.cols));
    const double error = test::relative_error(got, want);
    INFO(fmt::format("input {} {} {} x {}{} seed {}: workgroup {}, {} threads/row, {} rows/team, {}: relative "
                     "error {:.3g}",
                     int(c.kind), gguf::type_name(c.type), c.rows, c.cols, c.accumulate ? " accumulate" : "", seed,
                     used.workgroup_size, used.threads_per_row, used.rows_per_team, used.float16 ? "fp16" : "fp32",
                     error));
    CHECK(error <= (used.float16 ? test::f16_tolerance : test::f32_tolerance));
}

}  // namespace

TEST_CASE("matvec with a fused RMSNorm or GLU input matches the references for every weight type") {
    for (Kind kind : {Kind::RmsNorm, Kind::SwiGlu, Kind::GeGlu})
        for (gguf::GgmlType type : test::weight_types) {
            const uint32_t g = test::column_granularity(type);
            for (InputCase c : {InputCase{kind, type, 37, 3 * g, true}, InputCase{kind, type, 67, g == 4 ? 100 : 5 * g}})
                check_input(test::device(), test::transfer(), c);
        }
}

TEST_CASE("matvec inputs give the same result for every launch shape") {
    const gpu::Capabilities& caps = test::device().caps();
    const uint32_t subgroup = std::max(caps.max_subgroup_size, caps.subgroup_size);
    // The RMSNorm sum runs over the whole workgroup, whatever its teams: one lane per row, subgroup
    // teams, and teams spanning subgroups; and over subgroups the workgroup leaves short (half a
    // subgroup, one and a half: a 16-lane workgroup on a 32-lane subgroup summed half of x^2 on an
    // NVIDIA H100).
    const uint32_t short_subgroup = std::max(caps.subgroup_size / 2, 1u);
    const std::vector<ops::MatvecConfig> shapes = {
        {.workgroup_size = 16, .threads_per_row = 1, .rows_per_team = 3},
        {.workgroup_size = 2 * subgroup, .threads_per_row = subgroup, .rows_per_team = 4},
        {.workgroup_size = 8 * subgroup, .threads_per_row = 2 * subgroup, .rows_per_team = 2},
        {.workgroup_size = short_subgroup, .threads_per_row = 1, .rows_per_team = 3},
        {.workgroup_size = 3 * short_subgroup, .threads_per_row = 1, .rows_per_team = 2},
    };
    using enum gguf::GgmlType;
    for (Kind kind : {Kind::RmsNorm, Kind::SwiGlu})
        for (gguf::GgmlType type : {Q4_0, Q5_1, F16})
            for (size_t i = 0; i < shapes.size(); ++i) {
                ops::MatvecConfig config = shapes[i];
                config.float16 = i % 2 == 0 && caps.use_float16() && ops::has_f16_variant(type);
                const uint32_t g = test::column_granularity(type);
                check_input(test::device(), test::transfer(), {kind, type, 61, g == 4 ? 36 : 7 * g, i % 2 == 1, config});
            }
}

TEST_CASE("matvec RMSNorm input over rows past lavapipe's loop cap") {
    // 70000 units of 32 per row: the norm's own loop and the row loop together stay under the cap only
    // because the op spreads long rows over more lanes.
    check_input(test::device(), test::transfer(), {Kind::RmsNorm, gguf::GgmlType::Q4_0, 3, 70000 * 32});
    check_input(test::device(), test::transfer(), {Kind::SwiGlu, gguf::GgmlType::Q8_0, 5, 40960, true});
}

namespace {

struct GluCase {
    ops::Glu activation;
    gguf::GgmlType type;
    uint32_t n_ff, cols, n_tokens;
    bool norm;  // an RMSNorm input (one token)
    std::optional<ops::MatvecConfig> config = std::nullopt;
};

// hidden = act(gate in) * (up in) for [gate | up] weights, against ref::matmul then the activation's
// reference, every token's output.
void check_glu_output(gpu::Device& device, gpu::Transfer& transfer, const GluCase& c) {
    const uint64_t seed = test::base_seed() ^ (uint64_t(c.activation) << 60) ^ (uint64_t(c.type) << 48) ^
                          (uint64_t(c.n_ff) << 24) ^ (uint64_t(c.n_tokens) << 20) ^ c.cols ^ (c.norm ? 1u << 19 : 0);
    const uint32_t rows = 2 * c.n_ff;
    test::HostWeights weights = test::random_weights(c.type, rows, c.cols, seed);
    std::vector<float> x = test::random_floats(size_t(c.n_tokens) * c.cols, seed + 1, -3.0f, 3.0f);
    std::vector<float> norm_weight = test::random_floats(c.cols, seed + 2, 0.5f, 1.5f);

    std::vector<float> in = c.norm ? reference_input(Kind::RmsNorm, x, norm_weight, c.cols) : x;
    std::vector<float> gate_up(size_t(c.n_tokens) * rows), want(size_t(c.n_tokens) * c.n_ff);
    ref::matmul(c.type, weights.blocks, rows, c.cols, in, c.n_tokens, gate_up);
    for (uint32_t t = 0; t < c.n_tokens; ++t) {
        const std::span<const float> gate = std::span(gate_up).subspan(size_t(t) * rows, c.n_ff);
        const std::span<const float> up = std::span(gate_up).subspan(size_t(t) * rows + c.n_ff, c.n_ff);
        const std::span<float> out = std::span(want).subspan(size_t(t) * c.n_ff, c.n_ff);
        if (c.activation == ops::Glu::SwiGlu) ref::swiglu(gate, up, out);
        if (c.activation == ops::Glu::GeGlu) ref::geglu(gate, up, out);
        if (c.activation == ops::Glu::SwiGluOai) ref::swiglu_oai(gate, up, out);
    }

    gpu::Buffer weight_buffer = test::upload_weights(device, transfer, weights);
    gpu::Buffer x_buffer = upload(device, transfer, x), norm_buffer = upload(device, transfer, norm_weight);
    gpu::Buffer hidden = upload(device, transfer, std::vector<float>(want.size(), NAN));  // every output written
    test::OpGraph g(device);
    const ops::MatvecInput input = c.norm ? ops::MatvecInput::rms_norm(g(x_buffer), g(norm_buffer), eps)
                                          : ops::MatvecInput::plain(g(x_buffer));
    g.run(ops::matvec_glu(device, g.weights(c.type, rows, c.cols, weight_buffer), c.activation, input, g(hidden),
                          c.n_tokens, c.config));
    std::vector<float> got(want.size());
    transfer.readback(hidden, std::span(got));

    const ops::MatvecConfig used = c.config.value_or(ops::matvec_config(device.caps(), c.type, c.cols, c.n_tokens));
    const double error = test::relative_error(got, want);
    INFO(fmt::format("glu output {} {} {} x {}, {} tokens{} seed {}: workgroup {}, {} threads/row, {} rows/team, {}: "
                     "relative error {:.3g}",
                     int(c.activation), gguf::type_name(c.type), rows, c.cols, c.n_tokens, c.norm ? ", norm" : "",
                     seed, used.workgroup_size, used.threads_per_row, used.rows_per_team, used.float16 ? "fp16" : "fp32",
                     error));
    CHECK(error <= (used.float16 ? test::f16_tolerance : test::f32_tolerance));
}

}  // namespace

TEST_CASE("matvec with a GLU output matches the references for every weight type") {
    const gpu::Capabilities& caps = test::device().caps();
    for (gguf::GgmlType type : test::weight_types) {
        const uint32_t g = test::column_granularity(type);
        for (uint32_t n_tokens : {1u, 3u}) {
            // The device's launch where it allows a GLU output; else one of two rows per team.
            std::optional<ops::MatvecConfig> config;
            const ops::MatvecConfig device_config = ops::matvec_config(caps, type, 5 * g, n_tokens);
            if (device_config.rows_per_team % 2 != 0) {
                config = device_config;
                config->rows_per_team = 2;
            }
            check_glu_output(test::device(), test::transfer(), {ops::Glu::SwiGlu, type, 37, 5 * g, n_tokens, false, config});
            if (n_tokens == 1)
                check_glu_output(test::device(), test::transfer(), {ops::Glu::GeGlu, type, 45, 3 * g, 1, true, config});
        }
    }
    check_glu_output(test::device(), test::transfer(), {ops::Glu::SwiGluOai, gguf::GgmlType::Q8_0, 29, 96, 1, true});
}

TEST_CASE("matvec GLU outputs and RMSNorm inputs give the same result for every launch shape") {
    const gpu::Capabilities& caps = test::device().caps();
    const uint32_t subgroup = std::max(caps.max_subgroup_size, caps.subgroup_size);
    const uint32_t short_subgroup = std::max(caps.subgroup_size / 2, 1u);
    const std::vector<ops::MatvecConfig> shapes = {
        {.workgroup_size = 16, .threads_per_row = 1, .rows_per_team = 4},
        {.workgroup_size = 2 * subgroup, .threads_per_row = subgroup, .rows_per_team = 2},
        {.workgroup_size = 8 * subgroup, .threads_per_row = 2 * subgroup, .rows_per_team = 8},
        {.workgroup_size = short_subgroup, .threads_per_row = 1, .rows_per_team = 2},
        {.workgroup_size = 3 * short_subgroup, .threads_per_row = 1, .rows_per_team = 6},
    };
    using enum gguf::GgmlType;
    for (gguf::GgmlType type : {Q4_0, Q4_K, F16})
        for (size_t i = 0; i < shapes.size(); ++i) {
            ops::MatvecConfig config = shapes[i];
            config.float16 = i % 2 == 0 && caps.use_float16() && ops::has_f16_variant(type);
            const uint32_t g = test::column_granularity(type);
            check_glu_output(test::device(), test::transfer(), {ops::Glu::SwiGlu, type, 31, g == 4 ? 36 : 3 * g, 1, true, config});
        }
}

TEST_CASE("matvec refuses an RMSNorm input without its weight and a GLU input without both halves") {
    gpu::Device& device = test::device();
    gpu::Buffer buffer = device.allocator().create(4096, gpu::MemoryDomain::Device);
    test::OpGraph g;
    const graph::Region range = g(buffer);
    const ops::WeightMatrix weights = g.weights(gguf::GgmlType::F32, 2, 512, buffer);
    CHECK_THROWS_WITH_AS(ops::matvec(device, weights, {.kind = Kind::RmsNorm, .x = range}, range.sub(0, 8), false),
                         doctest::Contains("needs a norm weight of 2048 bytes"), Error);
    CHECK_THROWS_WITH_AS(ops::matvec(device, weights, ops::MatvecInput::glu(ops::Glu::SwiGlu, range.sub(0, 2048)),
                                     range.sub(0, 8), false),
                         doctest::Contains("need x of 4096 bytes"), Error);
    const ops::WeightMatrix odd = g.weights(gguf::GgmlType::F32, 1, 512, buffer);
    CHECK_THROWS_WITH_AS(ops::matvec_glu(device, odd, ops::Glu::SwiGlu, ops::MatvecInput::plain(range), range, 1),
                         doctest::Contains("an even row count"), Error);
    CHECK_THROWS_WITH_AS(ops::matvec_glu(device, weights, ops::Glu::SwiGlu, ops::MatvecInput::plain(range), range, 1,
                                         ops::MatvecConfig{.workgroup_size = 8, .threads_per_row = 1, .rows_per_team = 3}),
                         doctest::Contains("an even number of rows per team"), Error);
}
