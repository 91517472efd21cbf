// blocks::ffn_moe as a render graph against a C++ reference of the whole block (model-notes.md C.0):
// sigmoid scores with a selection bias and a group limit, normalised and scaled weights, a fused
// gate_up expert stack, and a shared expert; a chunk (per-expert token lists, matmul_id) and the same
// tokens one at a time (matvec_id) agree with the reference and with each other; a chunk with int8
// activations (where the device takes them) agrees with the reference on int8-rounded inputs.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>

#include "gguf/quants.h"
#include "gpu_fixture.h"
#include "graph/baked.h"
#include "model/moe.h"
#include "ops/matmul.h"
#include "ops/ref/elementwise_ref.h"
#include "ops/ref/matmul_ref.h"
#include "ops/ref/moe_ref.h"

using namespace vkllm;

namespace {

constexpr uint32_t n_embd = 64, n_ff = 32, n_ff_shexp = 96, n_expert = 8;

struct HostMatrix {
    gguf::GgmlType type;
    uint32_t rows, cols;
    std::vector<std::byte> blocks;
};

HostMatrix random_matrix(gguf::GgmlType type, uint32_t rows, uint32_t cols, uint64_t seed) {
    const std::vector<float> values = test::random_floats(size_t(rows) * cols, seed, -0.3f, 0.3f);
    HostMatrix m{type, rows, cols, std::vector<std::byte>(gguf::row_bytes(type, cols) * rows)};
    gguf::quantize(type, values, m.blocks);
    return m;
}

model::Weight upload(const std::string& name, const HostMatrix& m) {
    model::Weight w{name, m.type, m.rows, m.cols, {}};
    w.buffer =
        test::device().allocator().create(m.blocks.size(), gpu::MemoryDomain::Device, gguf::row_bytes(m.type, m.cols));
    test::transfer().upload(w.buffer, 0, std::span<const std::byte>(m.blocks));
    test::transfer().flush();
    return w;
}

std::vector<float> product(const HostMatrix& m, std::span<const float> x) {
    std::vector<float> y(m.rows);
    ref::matmul(m.type, m.blocks, m.rows, m.cols, x, 1, y);
    return y;
}

struct Block {
    ops::MoeRouting routing{n_expert, 3, ops::MoeScoring::Sigmoid, true, 2.5f, 4, 2};
    HostMatrix gate_inp, gate_up_exps, down_exps, gate_up_shexp, down_shexp;
    std::vector<float> bias;

    Block(gguf::GgmlType type, uint64_t seed)
        : gate_inp(random_matrix(gguf::GgmlType::F32, n_expert, n_embd, seed)),
          gate_up_exps(random_matrix(type, n_expert * 2 * n_ff, n_embd, seed + 1)),
          down_exps(random_matrix(type, n_expert * n_embd, n_ff, seed + 2)),
          gate_up_shexp(random_matrix(type, 2 * n_ff_shexp, n_embd, seed + 3)),
          down_shexp(random_matrix(type, n_embd, n_ff_shexp, seed + 4)),
          bias(test::random_floats(n_expert, seed + 5, -0.2f, 0.2f)) {}

    // x[t] += the block over normed[t], one token at a time, the obvious way; with int8_activations
    // the gate and up products' input rounded to int8 blocks first, as ops::quantize_q8 rounds it (the
    // router and the down products keep their floats, model/blocks.h).
    void reference(std::span<const float> normed, std::span<float> x, uint32_t n_tokens,
                   bool int8_activations = false) const {
        auto rounded = [&](std::span<const float> values) {
            return int8_activations ? ref::dequantize_q8(ref::quantize_q8(values, uint32_t(values.size())))
                                    : std::vector<float>(values.begin(), values.end());
        };
        for (uint32_t t = 0; t < n_tokens; ++t) {
            const auto normed_row = normed.subspan(size_t(t) * n_embd, n_embd);
            const std::vector<float> in = rounded(normed_row);
            const ref::MoeSelection route = ref::moe_route(product(gate_inp, normed_row), bias, routing, 1);
            std::vector<double> sum(n_embd, 0.0);
            for (uint32_t s = 0; s < routing.n_expert_used; ++s) {
                std::vector<float> gate(n_ff), up(n_ff), hidden(n_ff), out(n_embd);
                const std::span<const uint32_t> id(&route.ids[s], 1);
                ref::expert_products(gate_up_exps.type, gate_up_exps.blocks, 2 * n_ff, n_embd, 0, n_ff, id, in, false,
                                     gate);
                ref::expert_products(gate_up_exps.type, gate_up_exps.blocks, 2 * n_ff, n_embd, n_ff, n_ff, id, in,
                                     false, up);
                ref::swiglu(gate, up, hidden);
                ref::expert_products(down_exps.type, down_exps.blocks, n_embd, n_ff, 0, n_embd, id, hidden, false,
                                     out);
                for (uint32_t i = 0; i < n_embd; ++i) sum[i] += double(route.weights[s]) * out[i];
            }
            const std::vector<float> gate_up = product(gate_up_shexp, in);
            std::vector<float> hidden(n_ff_shexp);
            ref::swiglu(std::span(gate_up).first(n_ff_shexp), std::span(gate_up).subspan(n_ff_shexp), hidden);
            const std::vector<float> shared = product(down_shexp, hidden);
            for (uint32_t i = 0; i < n_embd; ++i) x[size_t(t) * n_embd + i] += float(sum[i] + shared[i]);
        }
    }
};

// Runs ffn_moe over n_tokens rows of `normed` starting at `first`, adding into x's rows there.
void run_block(const Block& host, std::span<const float> normed, std::vector<float>& x, uint32_t first,
               uint32_t n_tokens) {
    gpu::Device& device = test::device();
    const model::Weight gate_inp = upload("ffn_gate_inp", host.gate_inp);
    const model::Weight bias = upload(
        "exp_probs_b", {gguf::GgmlType::F32, 1, n_expert,
                        std::vector<std::byte>(reinterpret_cast<const std::byte*>(host.bias.data()),
                                               reinterpret_cast<const std::byte*>(host.bias.data() + n_expert))});
    const model::Weight gate_up_exps = upload("ffn_gate_up_exps", host.gate_up_exps);
    const model::Weight down_exps = upload("ffn_down_exps", host.down_exps);
    model::WeightGroup gate_up_shexp;
    gate_up_shexp.parts.push_back(upload("ffn_gate_shexp+ffn_up_shexp", host.gate_up_shexp));
    const model::Weight down_shexp = upload("ffn_down_shexp", host.down_shexp);

    const size_t values = size_t(n_tokens) * n_embd;
    gpu::Buffer normed_buffer = test::upload(normed.subspan(size_t(first) * n_embd, values));
    gpu::Buffer x_buffer = test::upload(std::span<const float>(x).subspan(size_t(first) * n_embd, values));
    graph::Graph g(device);
    const model::StepInputs step{};
    model::blocks::Builder b{g, device, step, {n_tokens, false}};
    const model::blocks::MoeWeights weights{.gate_inp = gate_inp,
                                            .exp_probs_b = &bias,
                                            .gate_up_exps = &gate_up_exps,
                                            .down_exps = down_exps,
                                            .gate_up_shexp = &gate_up_shexp,
                                            .down_shexp = &down_shexp};
    const model::blocks::MoeSpec spec{.routing = host.routing, .n_ff_exp = n_ff, .n_ff_shexp = n_ff_shexp};
    model::blocks::ffn_moe(b, 0, g.persistent("normed", normed_buffer.range()), g.persistent("x", x_buffer.range()),
                           weights, spec);
    graph::BakedGraph baked = std::move(g).bake();
    baked.replay();
    const std::vector<float> out = test::download(x_buffer, values);
    std::copy(out.begin(), out.end(), x.begin() + size_t(first) * n_embd);
}

}  // namespace

TEST_CASE("ffn_moe over a chunk and token by token matches the reference block") {
    test::Float32Kernels fp32_arithmetic;
    const uint32_t n_tokens = 11;
    for (gguf::GgmlType type : {gguf::GgmlType::F32, gguf::GgmlType::Q8_0}) {
        CAPTURE(gguf::type_name(type));
        // Where the device's integer dot products pay (ops/matmul.h; ctest's *_int8_activations run
        // forces them on lavapipe), the chunk's products read int8 activations and the tokens one at a
        // time keep floats, so each is held against its own reference.
        const bool int8 = ops::int8_activations_pay(test::device().caps(), type);
        const Block block(type, 4242);
        const std::vector<float> normed = test::random_floats(size_t(n_tokens) * n_embd, 7, -2.0f, 2.0f);
        const std::vector<float> x0 = test::random_floats(size_t(n_tokens) * n_embd, 8);
        std::vector<float> want = x0, want_int8 = x0, chunk = x0, single = x0;
        block.reference(normed, want, n_tokens);
        run_block(block, normed, chunk, 0, n_tokens);
        for (uint32_t t = 0; t < n_tokens; ++t) run_block(block, normed, single, t, 1);
        CHECK(test::relative_error(single, want) <= 1e-5);
        if (int8) {
            // The activations' rounding moves x by ~1e-2; a hidden value the GPU computed rounding a
            // step away from the reference's would move it by ~1e-3 (lavapipe: 8e-8).
            block.reference(normed, want_int8, n_tokens, true);
            CHECK(test::relative_error(chunk, want_int8) <= 2e-3);
            CHECK(test::relative_error(chunk, want) > 5e-3);
        } else {
            CHECK(test::relative_error(chunk, want) <= 1e-5);
            CHECK(test::relative_error(chunk, single) <= 1e-5);
        }
        // The block must change x noticeably, or the comparisons above check nothing.
        CHECK(test::relative_error(x0, want) > 0.1);
    }
}

TEST_CASE("ffn_moe refuses weights that disagree with the spec, naming the layer and tensor") {
    const Block block(gguf::GgmlType::F32, 99);
    const model::Weight gate_inp = upload("blk.3.ffn_gate_inp.weight", block.gate_inp);
    const model::Weight gate_up_exps = upload("blk.3.ffn_gate_up_exps.weight", block.gate_up_exps);
    const model::Weight down_exps = upload("blk.3.ffn_down_exps.weight", block.down_exps);
    model::blocks::MoeSpec spec{.routing = block.routing, .n_ff_exp = n_ff};
    const model::blocks::MoeWeights fused{.gate_inp = gate_inp, .gate_up_exps = &gate_up_exps, .down_exps = down_exps};
    CHECK_NOTHROW(model::blocks::check_moe(3, fused, spec));
    spec.n_ff_exp = n_ff / 2;
    CHECK_THROWS_WITH_AS(model::blocks::check_moe(3, fused, spec),
                         "layer 3 mixture of experts: 'blk.3.ffn_gate_up_exps.weight' is 512 x 64, expected 256 x 64",
                         Error);
    spec.n_ff_exp = n_ff;
    const model::blocks::MoeWeights both{.gate_inp = gate_inp, .gate_up_exps = &gate_up_exps, .gate_exps = &gate_up_exps,
                                         .down_exps = down_exps};
    CHECK_THROWS_WITH_AS(model::blocks::check_moe(3, both, spec), doctest::Contains("needs ffn_gate_up_exps or both"),
                         Error);
    spec.n_ff_shexp = n_ff_shexp;
    CHECK_THROWS_WITH_AS(model::blocks::check_moe(3, fused, spec), doctest::Contains("a shared expert needs"), Error);
    spec.n_ff_shexp = 0;
    spec.routing.n_expert_used = 9;
    CHECK_THROWS_WITH_AS(model::blocks::check_moe(3, fused, spec), doctest::Contains("9 experts used of 8"), Error);
}
