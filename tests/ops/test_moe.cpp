// Mixture-of-experts ops on the GPU against their C++ references: routing (softmax and sigmoid
// scoring, selection bias, group limit, normalisation, routed scale; ties to the lower index, NaN
// never chosen), the per-expert token lists, products with the selected experts for every weight
// type (one token and a grouped chunk, fused gate/up halves, split weight buffers with experts
// straddling segments, rows past lavapipe's loop cap; matmul_id with int8 activations too) and the
// weighted combine.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <numeric>
#include <random>

#include "gpu_fixture.h"
#include "op_harness.h"
#include "ops/expert_matmul.h"
#include "ops/moe_route.h"
#include "ops/ref/elementwise_ref.h"
#include "ops/ref/matmul_ref.h"
#include "ops/ref/moe_ref.h"
#include "weight_fixture.h"

using namespace vkllm;

namespace {

ref::MoeSelection gpu_route(const ops::MoeRouting& routing, std::span<const float> logits, std::span<const float> bias,
                            uint32_t n_tokens) {
    gpu::Device& device = test::device();
    gpu::Buffer logits_buffer = test::upload_values(logits);
    gpu::Buffer bias_buffer = test::upload_values(bias);
    const uint64_t out_bytes = uint64_t(n_tokens) * routing.n_expert_used * 4;
    gpu::Buffer ids = test::zero_buffer(out_bytes), weights = test::zero_buffer(out_bytes);
    test::OpGraph g;
    g.run(ops::moe_route(device, routing, g(logits_buffer), bias.empty() ? graph::Region{} : g(bias_buffer), g(ids),
                         g(weights), n_tokens));
    const size_t count = size_t(n_tokens) * routing.n_expert_used;
    return {test::download_values<uint32_t>(ids, count), test::download_values<float>(weights, count)};
}

void check_route(const ops::MoeRouting& routing, std::span<const float> logits, std::span<const float> bias,
                 uint32_t n_tokens, uint64_t seed, const char* what) {
    const ref::MoeSelection want = ref::moe_route(logits, bias, routing, n_tokens);
    const ref::MoeSelection got = gpu_route(routing, logits, bias, n_tokens);
    INFO(what << ", seed " << seed);
    CHECK(got.ids == want.ids);
    test::check_close(got.weights, want.weights, 1e-6, seed, what);
}

struct RouteCase {
    const char* what;
    ops::MoeRouting routing;
    bool bias;
};

}  // namespace

TEST_CASE("moe_route matches the reference for each model's routing") {
    using enum ops::MoeScoring;
    const RouteCase cases[] = {
        {"Mixtral: softmax, top 2 of 8, normalised", {8, 2, Softmax, true, 0, 0, 0}, false},
        {"Mistral Small 4: softmax, top 4 of 128, normalised", {128, 4, Softmax, true, 1.0f, 1, 1}, false},
        {"softmax, top 6 of 64, not normalised, scaled", {64, 6, Softmax, false, 16.0f, 0, 0}, false},
        {"MiniMax-M3: sigmoid + bias, top 8 of 128, normalised, x2", {128, 8, Sigmoid, true, 2.0f, 0, 0}, true},
        {"DeepSeek-V3: sigmoid + bias, 8 groups keep 4, top 8 of 256, x2.5", {256, 8, Sigmoid, true, 2.5f, 8, 4}, true},
        {"softmax, 4 groups keep 1, top 3 of 12", {12, 3, Softmax, true, 0, 4, 1}, false},
        {"every expert used: 32 of 32", {32, 32, Sigmoid, false, 0, 0, 0}, true},
        {"the largest routing: top 32 of 512", {512, 32, Softmax, true, 0, 0, 0}, false},
    };
    for (const RouteCase& c : cases) {
        const uint64_t seed = test::base_seed() ^ (uint64_t(c.routing.n_expert) << 20) ^ c.routing.n_expert_used;
        const uint32_t n_tokens = 7;
        std::vector<float> logits = test::random_floats(size_t(n_tokens) * c.routing.n_expert, seed, -4.0f, 4.0f);
        std::vector<float> bias =
            c.bias ? test::random_floats(c.routing.n_expert, seed + 1, -0.5f, 0.5f) : std::vector<float>{};
        check_route(c.routing, logits, bias, n_tokens, seed, c.what);
    }
}

TEST_CASE("moe_route breaks ties to the lower expert index and never selects NaN") {
    using enum ops::MoeScoring;
    const float nan = std::numeric_limits<float>::quiet_NaN();
    // Token 0: all equal; token 1: pairs of equal logits; token 2: NaN logits among equal ones.
    const std::vector<float> logits = {0, 0, 0, 0, 0, 0, 0, 0, 1, 3, 3, 1, 2, 2, 0, 3, nan, 1, nan, 1, 1, nan, 0, 0};
    for (ops::MoeScoring scoring : {Softmax, Sigmoid}) {
        const ops::MoeRouting routing{8, 3, scoring, false, 0, 0, 0};
        const ref::MoeSelection got = gpu_route(routing, logits, {}, 3);
        // Softmax over a row with NaN is NaN throughout: only sigmoid keeps the other experts' order.
        const std::vector<uint32_t> want_ids = {0, 1, 2, 1, 2, 7};
        CHECK(std::vector<uint32_t>(got.ids.begin(), got.ids.begin() + 6) == want_ids);
        if (scoring == Sigmoid)
            CHECK(std::vector<uint32_t>(got.ids.begin() + 6, got.ids.end()) == std::vector<uint32_t>{1, 3, 4});
    }
    // Equal groups: the lower group is kept; equal experts within it: the lower index first.
    const std::vector<float> grouped = {1, 1, 0, 0, 1, 1, 0, 0};
    const ops::MoeRouting routing{8, 2, Sigmoid, true, 0, 4, 1};
    CHECK(gpu_route(routing, grouped, {}, 1).ids == std::vector<uint32_t>{0, 1});
    // The bias steers selection only: the weights stay the unbiased scores.
    const std::vector<float> flat(8, 0.0f), bias = {0, 0, 0, 0, 0, 0, 1, 0.5f};
    const ref::MoeSelection biased = gpu_route({8, 2, Sigmoid, false, 0, 0, 0}, flat, bias, 1);
    CHECK(biased.ids == std::vector<uint32_t>{6, 7});
    CHECK(biased.weights == std::vector<float>{0.5f, 0.5f});
}

TEST_CASE("moe_group lists each expert's entries in token order") {
    const uint32_t n_expert = 9, n_used = 3, n_tokens = 150;
    std::mt19937_64 rng(test::base_seed());
    std::vector<uint32_t> ids;
    for (uint32_t t = 0; t < n_tokens; ++t) {
        std::vector<uint32_t> experts(n_expert);
        std::iota(experts.begin(), experts.end(), 0u);
        std::shuffle(experts.begin(), experts.end(), rng);
        ids.insert(ids.end(), experts.begin(), experts.begin() + n_used);
    }
    gpu::Buffer ids_buffer = test::upload_values(std::span<const uint32_t>(ids));
    gpu::Buffer counts = test::zero_buffer(n_expert * 4);
    gpu::Buffer entries = test::zero_buffer(ops::moe_group_entries_bytes(n_expert, n_tokens));
    test::OpGraph g;
    g.run(ops::moe_group(test::device(), g(ids_buffer), g(counts), g(entries), n_expert, n_used, n_tokens));
    const std::vector<uint32_t> got_counts = test::download_values<uint32_t>(counts, n_expert);
    const std::vector<uint32_t> got_entries = test::download_values<uint32_t>(entries, size_t(n_expert) * n_tokens);
    for (uint32_t e = 0; e < n_expert; ++e) {
        std::vector<uint32_t> want;
        for (uint32_t i = 0; i < ids.size(); ++i)
            if (ids[i] == e) want.push_back(i);
        INFO("expert " << e << ", seed " << test::base_seed());
        REQUIRE(got_counts[e] == want.size());
        CHECK(std::vector<uint32_t>(got_entries.begin() + e * n_tokens,
                                    got_entries.begin() + e * n_tokens + want.size()) == want);
    }
}

TEST_CASE("moe_combine adds the weighted experts, then the shared expert, to the residual") {
    const uint32_t n = 301, n_used = 3, n_tokens = 4;
    const uint64_t seed = test::base_seed() + 11;
    const std::vector<float> y = test::random_floats(size_t(n_tokens) * n_used * n, seed);
    const std::vector<float> weights = test::random_floats(size_t(n_tokens) * n_used, seed + 1, 0.0f, 1.0f);
    const std::vector<float> shared = test::random_floats(size_t(n_tokens) * n, seed + 2);
    const std::vector<float> x0 = test::random_floats(size_t(n_tokens) * n, seed + 3);
    for (bool with_shared : {false, true}) {
        std::vector<float> want = x0;
        for (uint32_t t = 0; t < n_tokens; ++t)
            for (uint32_t i = 0; i < n; ++i) {
                double sum = 0;
                for (uint32_t s = 0; s < n_used; ++s)
                    sum += double(weights[t * n_used + s]) * y[(t * n_used + s) * n + i];
                if (with_shared) sum += shared[t * n + i];
                want[t * n + i] = float(want[t * n + i] + sum);
            }
        gpu::Buffer y_buffer = test::upload(y), w_buffer = test::upload(weights), s_buffer = test::upload(shared);
        gpu::Buffer x_buffer = test::upload(x0);
        test::OpGraph g;
        g.run(ops::moe_combine(test::device(), g(y_buffer), g(w_buffer), with_shared ? g(s_buffer) : graph::Region{},
                               g(x_buffer), n, n_used, n_tokens));
        test::check_close(test::download(x_buffer, want.size()), want, 1e-6, seed, "moe_combine");
    }
}

namespace {

struct ExpertCase {
    gguf::GgmlType type;
    ops::ExpertRows select;
    uint32_t cols;
    uint32_t n_tokens = 1;  // 1: matvec_id, else matmul_id over grouped tokens
    uint32_t n_used = 3;
    std::optional<ops::MatvecConfig> matvec_config = std::nullopt;  // replaces the device's launch shape
    std::optional<ops::MatmulConfig> matmul_config = std::nullopt;
};

double tolerance(const gpu::Device& device, const ExpertCase& c) {
    const ops::MatmulConfig matmul = c.matmul_config.value_or(ops::matmul_config(device.caps(), c.type));
    const bool float16 = c.n_tokens == 1
                             ? c.matvec_config.value_or(ops::matvec_config(device.caps(), c.type, c.cols)).float16
                             : matmul.float16 || matmul.coopmat;  // cooperative matrices multiply f16 tiles
    return float16 ? test::f16_tolerance : test::f32_tolerance;
}

// Random distinct experts per token, as the router gives.
std::vector<uint32_t> random_ids(uint32_t n_tokens, uint32_t n_used, uint32_t n_expert, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<uint32_t> ids;
    for (uint32_t t = 0; t < n_tokens; ++t) {
        std::vector<uint32_t> experts(n_expert);
        std::iota(experts.begin(), experts.end(), 0u);
        std::shuffle(experts.begin(), experts.end(), rng);
        ids.insert(ids.end(), experts.begin(), experts.begin() + n_used);
    }
    return ids;
}

// A buffer on `device` holding `values` (the split-buffer cases use a device of their own).
template <class T>
gpu::Buffer upload_on(gpu::Device& device, gpu::Transfer& transfer, std::span<const T> values) {
    gpu::Buffer buffer =
        device.allocator().create(std::max<uint64_t>(values.size_bytes(), 4), gpu::MemoryDomain::Device);
    transfer.upload(buffer, 0, std::as_bytes(values));
    transfer.flush();
    return buffer;
}

// Both input layouts: one x per token (gate/up), and one per slot (down). With int8 activations
// the reference reads what the kernel read, the GPU's quantize_q8 blocks dequantized: its block sums
// are exact, so it stays within the f32 tolerance.
void check_experts(gpu::Device& device, gpu::Transfer& transfer, const ExpertCase& c) {
    const ops::ExpertRows& s = c.select;
    const uint64_t seed = test::base_seed() ^ (uint64_t(c.type) << 56) ^ (uint64_t(s.expert_rows) << 32) ^
                          (uint64_t(c.cols) << 8) ^ c.n_tokens;
    const test::HostWeights weights = test::random_weights(c.type, s.n_expert * s.expert_rows, c.cols, seed);
    const gpu::Buffer weight_buffer = test::upload_weights(device, transfer, weights);
    const std::vector<uint32_t> ids = random_ids(c.n_tokens, c.n_used, s.n_expert, seed);
    const uint32_t slots = c.n_tokens * c.n_used;
    const bool int8 = c.n_tokens > 1 && c.matmul_config && c.matmul_config->int8_activations;
    gpu::Buffer ids_buffer = upload_on(device, transfer, std::span<const uint32_t>(ids));
    gpu::Buffer counts = device.allocator().create(s.n_expert * 4, gpu::MemoryDomain::Device);
    gpu::Buffer entries =
        device.allocator().create(ops::moe_group_entries_bytes(s.n_expert, c.n_tokens), gpu::MemoryDomain::Device);
    for (bool x_per_slot : {false, true}) {
        const uint32_t x_rows = x_per_slot ? slots : c.n_tokens;
        std::vector<float> x = test::random_floats(size_t(x_rows) * c.cols, seed + 1);
        gpu::Buffer x_buffer = upload_on(device, transfer, std::span<const float>(x));
        gpu::Buffer x_int8 = device.allocator().create(int8 ? ops::int8_activation_bytes(x_rows, c.cols) : 4,
                                                       gpu::MemoryDomain::Device);
        gpu::Buffer y_buffer =
            device.allocator().create(uint64_t(slots) * s.rows * 4, gpu::MemoryDomain::Device);
        test::OpGraph g(device);
        const ops::WeightMatrix matrix = g.weights(c.type, weights.rows, c.cols, weight_buffer);
        std::vector<graph::Dispatch> dispatches;
        if (c.n_tokens == 1) {
            dispatches = ops::matvec_id(device, matrix, s, {g(x_buffer), x_per_slot}, g(ids_buffer), {g(y_buffer)},
                                        c.n_used, c.matvec_config);
        } else {
            dispatches = {
                ops::moe_group(device, g(ids_buffer), g(counts), g(entries), s.n_expert, c.n_used, c.n_tokens)};
            if (int8) dispatches.push_back(ops::quantize_q8(device, g(x_buffer), g(x_int8), x_rows, c.cols));
            for (graph::Dispatch& d : ops::matmul_id(device, matrix, s, int8 ? g(x_int8) : g(x_buffer), x_per_slot,
                                                     g(counts), g(entries), g(y_buffer), c.n_tokens, c.n_used,
                                                     c.matmul_config))
                dispatches.push_back(std::move(d));
        }
        g.run(dispatches);
        if (int8) {
            std::vector<uint32_t> blocks(ops::int8_activation_bytes(x_rows, c.cols) / 4);
            transfer.readback(x_int8, std::span(blocks));
            x = ref::dequantize_q8(blocks);
        }
        // The reference per token: its slots' experts on its x (or each slot's x).
        std::vector<float> want(size_t(slots) * s.rows);
        for (uint32_t t = 0; t < c.n_tokens; ++t)
            ref::expert_products(c.type, weights.blocks, s.expert_rows, c.cols, s.row_begin, s.rows,
                                 std::span(ids).subspan(t * c.n_used, c.n_used),
                                 std::span<const float>(x).subspan(size_t(x_per_slot ? t * c.n_used : t) * c.cols),
                                 x_per_slot, std::span(want).subspan(size_t(t) * c.n_used * s.rows));
        std::vector<float> got(want.size());
        transfer.readback(y_buffer, std::span(got));
        INFO(fmt::format("{} {} experts of {} rows (rows {}..{}) x {} cols, {} tokens, x per {}{}, {} segments, seed {}",
                         gguf::type_name(c.type), s.n_expert, s.expert_rows, s.row_begin, s.row_begin + s.rows, c.cols,
                         c.n_tokens, x_per_slot ? "slot" : "token", int8 ? " in int8" : "",
                         weight_buffer.segments().size(), seed));
        CHECK(test::relative_error(got, want) <= tolerance(device, c));
    }
}

// matmul_id with int8 activations on this device's int8 launch, or `config`.
ExpertCase int8_case(gguf::GgmlType type, ops::ExpertRows select, uint32_t cols, uint32_t n_tokens, uint32_t n_used,
                     std::optional<ops::MatmulConfig> config = std::nullopt) {
    const gpu::Capabilities& caps = test::device().caps();
    return {type, select, cols, n_tokens, n_used, std::nullopt,
            config.value_or(ops::matmul_id_config(caps, type, select, n_tokens, n_used, true))};
}

}  // namespace

TEST_CASE("matvec_id and matmul_id read the selected experts, for every weight type") {
    for (gguf::GgmlType type : test::weight_types) {
        const uint32_t g = test::column_granularity(type);
        // A plain stack; the up half of a fused gate_up stack; a grouped chunk spanning token tiles.
        for (const ExpertCase& c :
             {ExpertCase{type, {6, 40, 0, 40}, 3 * g}, ExpertCase{type, {5, 46, 23, 23}, 2 * g},
              ExpertCase{type, {4, 36, 0, 36}, 2 * g, 70, 2}, ExpertCase{type, {7, 34, 17, 17}, g, 45, 3}})
            check_experts(test::device(), test::transfer(), c);
    }
}

TEST_CASE("matvec_id forms act(gate) * up from each slot's [gate | up] and writes rows at a stride") {
    using enum gguf::GgmlType;
    const uint32_t n_expert = 5, rows = 24, n_slots = 3;
    for (gguf::GgmlType type : {Q4_K, Q8_0, F32}) {
        const uint32_t cols = type == Q4_K ? 256 : 64;
        const uint64_t seed = test::base_seed() + uint64_t(type);
        const test::HostWeights weights = test::random_weights(type, n_expert * rows, cols, seed);
        const gpu::Buffer weight_buffer = test::upload_weights(test::device(), test::transfer(), weights);
        const std::vector<uint32_t> ids = {4, 0, 2};
        const std::vector<float> gate_up = test::random_floats(size_t(n_slots) * 2 * cols, seed + 1, -3.0f, 3.0f);
        for (ops::Glu glu : {ops::Glu::SwiGlu, ops::Glu::GeGlu}) {
            std::vector<float> hidden(size_t(n_slots) * cols);
            for (uint32_t s = 0; s < n_slots; ++s) {
                const auto row = std::span(gate_up).subspan(size_t(s) * 2 * cols, 2 * cols);
                const auto out = std::span(hidden).subspan(size_t(s) * cols, cols);
                glu == ops::Glu::SwiGlu ? ref::swiglu(row.first(cols), row.subspan(cols), out)
                                        : ref::geglu(row.first(cols), row.subspan(cols), out);
            }
            std::vector<float> products(size_t(n_slots) * rows);
            ref::expert_products(type, weights.blocks, rows, cols, 0, rows, ids, hidden, true, products);
            // Each slot's rows land at y[s * 2 * rows + rows ..]; the rest of y keeps its values.
            const std::vector<float> y0 = test::random_floats(size_t(n_slots) * 2 * rows, seed + 2);
            std::vector<float> want = y0;
            for (uint32_t s = 0; s < n_slots; ++s)
                std::copy_n(products.begin() + s * rows, rows, want.begin() + s * 2 * rows + rows);
            gpu::Buffer x = test::upload(gate_up), y = test::upload(y0);
            gpu::Buffer id_buffer = test::upload_values(std::span<const uint32_t>(ids));
            test::OpGraph g;
            g.run(ops::matvec_id(test::device(), g.weights(type, n_expert * rows, cols, weight_buffer),
                                 {n_expert, rows, 0, rows}, {g(x), true, glu}, g(id_buffer), {g(y), 2 * rows, rows},
                                 n_slots));
            test::check_close(test::download(y, want.size()), want, tolerance(test::device(), {type, {}, cols}), seed,
                              gguf::type_name(type).data());
        }
    }
}

TEST_CASE("matvec_id and matmul_id give the same result for every launch shape") {
    const gpu::Capabilities& caps = test::device().caps();
    const uint32_t subgroup = std::max(caps.max_subgroup_size, caps.subgroup_size);
    using enum gguf::GgmlType;
    // A row per lane; subgroup teams; teams spanning subgroups (partial sums through shared memory).
    for (ops::MatvecConfig config :
         {ops::MatvecConfig{.workgroup_size = 16, .threads_per_row = 1, .rows_per_team = 3},
          ops::MatvecConfig{.workgroup_size = 2 * subgroup, .threads_per_row = subgroup, .rows_per_team = 4},
          ops::MatvecConfig{.workgroup_size = 4 * subgroup, .threads_per_row = 4 * subgroup, .rows_per_team = 1}})
        for (gguf::GgmlType type : {Q4_K, Q8_0, F16})
            check_experts(test::device(), test::transfer(), {type, {5, 70, 35, 35}, 256, 1, 3, config});
    // The GPUs' 64 x 64 tile and an uneven one, over experts holding more tokens than a tile.
    for (ops::MatmulConfig config :
         {ops::MatmulConfig{.tile_rows = 64, .tile_tokens = 64}, ops::MatmulConfig{.tile_rows = 16, .tile_tokens = 8}}) {
        // 256 invocations and 18 KiB of shared memory: more than a small device profile allows.
        if (config.tile_rows == 64 && (caps.max_workgroup_invocations < 256 || caps.max_shared_memory < 18 * 1024)) {
            MESSAGE("the 64 x 64 tile does not fit this device: skipped");
            continue;
        }
        for (gguf::GgmlType type : {Q4_K, Q5_0})
            check_experts(test::device(), test::transfer(), {type, {3, 80, 0, 80}, 256, 100, 2, std::nullopt, config});
    }
}

// The cooperative-matrix kernel over the selected experts (ops/coopmat.h), the device's or its emulated
// build (test::coopmat_under_test): every expert tile stores through shared memory, tokens scattered
// over entries; the tile halved to what an expert gets, as matmul_id_config does.
TEST_CASE("matmul_id on cooperative matrices: experts holding more and fewer tokens than a tile") {
    const std::optional<ops::CoopmatShape> shape = test::coopmat_under_test();
    if (!shape) return;
    ops::MatmulConfig config = ops::coopmat_matmul_config(*shape);
    using enum gguf::GgmlType;
    for (gguf::GgmlType type : {Q4_K, Q5_0, F16})
        check_experts(test::device(), test::transfer(), {type, {3, 80, 0, 80}, 256, 100, 2, std::nullopt, config});
    config.tile_tokens /= 2;
    check_experts(test::device(), test::transfer(), {Q8_0, {6, 36, 12, 20}, 64, 9, 2, std::nullopt, config});
}

TEST_CASE("matvec_id and matmul_id over rows past lavapipe's loop cap") {
    using enum gguf::GgmlType;
    // 16448 columns: 514 units per row for matvec; 24832 columns: matmul_id sums in two dispatches.
    check_experts(test::device(), test::transfer(), {Q4_0, {3, 6, 0, 6}, 16448, 1, 2});
    check_experts(test::device(), test::transfer(), {Q4_K, {3, 6, 3, 3}, 24832, 9, 2});
}

TEST_CASE("matvec_id and matmul_id over split weight buffers, experts straddling segments") {
    setenv("VKLLM_MAX_BUFFER_RANGE", "4000", 1);
    gpu::Device device(test::instance());
    unsetenv("VKLLM_MAX_BUFFER_RANGE");
    gpu::Transfer transfer(device);
    using enum gguf::GgmlType;
    // Q8_0 rows of 96 columns are 102 bytes: 39 rows per segment, experts of 25 rows; rows of 32
    // columns are 34 bytes: 117 per segment, experts of 50; F32 rows of 16: 62 per segment, experts of 30.
    check_experts(device, transfer, {Q8_0, {8, 25, 0, 25}, 96});
    check_experts(device, transfer, {Q8_0, {8, 50, 25, 25}, 32, 10, 2});
    check_experts(device, transfer, {F32, {5, 30, 0, 30}, 16, 9, 2});
}

TEST_CASE("matmul_id with int8 activations: Q4_0 and Q8_0 stacks, fused halves, small tiles, long rows, split buffers") {
    if (!test::device().caps().integer_dot_product) {
        MESSAGE("the device has no integer dot products: the int8 kernel is not built for it");
        return;
    }
    using enum gguf::GgmlType;
    for (gguf::GgmlType type : {Q4_0, Q8_0}) {
        // A plain stack over token tiles; the up half of a fused stack; a 16 x 8 tile over experts holding
        // more tokens than a tile; 776 blocks a row, summed in two dispatches.
        check_experts(test::device(), test::transfer(), int8_case(type, {4, 36, 0, 36}, 64, 70, 2));
        check_experts(test::device(), test::transfer(), int8_case(type, {7, 34, 17, 17}, 32, 45, 3));
        check_experts(test::device(), test::transfer(),
                      int8_case(type, {3, 80, 0, 80}, 256, 100, 2,
                                ops::MatmulConfig{.tile_rows = 16, .tile_tokens = 8, .int8_activations = true}));
        check_experts(test::device(), test::transfer(), int8_case(type, {3, 6, 3, 3}, 24832, 9, 2));
    }
    // Experts straddling weight segments (Q8_0 rows of 32 columns: 117 a segment, experts of 50).
    setenv("VKLLM_MAX_BUFFER_RANGE", "4000", 1);
    gpu::Device device(test::instance());
    unsetenv("VKLLM_MAX_BUFFER_RANGE");
    gpu::Transfer transfer(device);
    const ops::ExpertRows select{8, 50, 25, 25};
    check_experts(device, transfer,
                  {Q8_0, select, 32, 10, 2, std::nullopt, ops::matmul_id_config(device.caps(), Q8_0, select, 10, 2, true)});
}

TEST_CASE("MoE ops refuse shapes they cannot take") {
    gpu::Device& device = test::device();
    gpu::Buffer buffer = device.allocator().create(4096, gpu::MemoryDomain::Device);
    test::OpGraph g;
    const graph::Region range = g(buffer);
    using enum ops::MoeScoring;
    CHECK_THROWS_WITH_AS(ops::moe_route(device, {600, 2, Softmax}, range, {}, range, range, 1),
                         doctest::Contains("600 experts"), Error);
    CHECK_THROWS_WITH_AS(ops::moe_route(device, {8, 9, Softmax}, range, {}, range, range, 1),
                         doctest::Contains("9 experts used of 8"), Error);
    CHECK_THROWS_WITH_AS(ops::moe_route(device, {12, 2, Softmax, true, 0, 5, 2}, range, {}, range, range, 1),
                         doctest::Contains("do not split into 5 groups"), Error);
    CHECK_THROWS_WITH_AS(ops::moe_route(device, {8, 2, ops::MoeScoring(3)}, range, {}, range, range, 1),
                         doctest::Contains("gating function 3"), Error);
    CHECK_THROWS_WITH_AS(ops::moe_route(device, {128, 2, Softmax}, range, {}, range, range, 9),
                         doctest::Contains("buffers too small"), Error);
    const ops::WeightMatrix experts = g.weights(gguf::GgmlType::F32, 32, 16, buffer);
    CHECK_THROWS_WITH_AS(ops::matvec_id(device, experts, {4, 8, 4, 8}, {range}, range, {range}, 2),
                         doctest::Contains("do not fit a stack of 32 rows"), Error);
    CHECK_THROWS_WITH_AS(ops::matvec_id(device, experts, {4, 8, 0, 8}, {range.sub(0, 32)}, range, {range}, 2),
                         doctest::Contains("need x of 64 bytes"), Error);
    CHECK_THROWS_WITH_AS(ops::matvec_id(device, experts, {4, 8, 0, 8}, {range, false, ops::Glu::SwiGlu}, range,
                                        {range}, 2),
                         doctest::Contains("a GLU input needs one [gate | up] per slot"), Error);
    CHECK_THROWS_WITH_AS(ops::matmul_id(device, experts, {4, 8, 0, 8}, range, false, range, range, range, 2, 2,
                                        ops::MatmulConfig{.tile_rows = 16, .tile_tokens = 8, .int8_activations = true}),
                         doctest::Contains("matmul_id: int8 activations need Q4_0 or Q8_0 weights (got f32)"), Error);
}
