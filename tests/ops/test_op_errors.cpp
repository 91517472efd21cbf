// The ops refuse shapes and buffers their kernels cannot run, with a vkllm::Error naming the op,
// before anything reaches the GPU.
#include <doctest/doctest.h>

#include "core/error.h"
#include "op_harness.h"
#include "ops/attention.h"
#include "ops/elementwise.h"
#include "ops/embed.h"
#include "ops/kv_write.h"
#include "ops/matmul.h"
#include "ops/rmsnorm.h"
#include "ops/rope.h"
#include "ops/softmax.h"
#include "ops/topk.h"

using namespace vkllm;

TEST_CASE("ops refuse shapes and buffers they cannot run") {
    gpu::Device& device = test::device();
    gpu::Buffer buffer = test::zero_buffer(4096);
    test::OpGraph g;
    const graph::Region r = g(buffer), small = r.sub(0, 64);

    CHECK_THROWS_WITH_AS(ops::rmsnorm(device, small, std::nullopt, r, 100, 1, 1e-6f), doctest::Contains("rmsnorm"), Error);
    CHECK_THROWS_AS(ops::softmax(device, r, r, 0, 1), Error);
    CHECK_THROWS_AS(ops::add(device, r, r, r, 100, 0), Error);
    CHECK_THROWS_AS(ops::glu(device, ops::Glu::SwiGlu, small, r, r, 100), Error);

    ops::RopeConfig odd{.n_dims = 63};
    CHECK_THROWS_WITH_AS(ops::rope_phase_table(odd), doctest::Contains("rope"), Error);
    ops::RopeConfig bad_factors{.n_dims = 64, .freq_factors = std::vector<float>(31, 1.0f)};
    CHECK_THROWS_AS(ops::rope_phase_table(bad_factors), Error);
    ops::RopeConfig yarn_without_context{.n_dims = 64, .ext_factor = 1.0f};
    CHECK_THROWS_AS(ops::rope_phase_table(yarn_without_context), Error);
    CHECK_THROWS_AS(ops::rope(device, {.n_dims = 128}, {.n_tokens = 1, .n_head = 1, .head_dim = 64}, r, r, r), Error);
    CHECK_THROWS_AS(ops::attn_temp(device, r, r, 1, 8, 0.1f, 0), Error);

    // int8 activations: whole blocks of 32 and room for them; Q4_0 or Q8_0 weights only.
    CHECK_THROWS_WITH_AS(ops::quantize_q8(device, r, r, 1, 48), doctest::Contains("quantize_q8"), Error);
    CHECK_THROWS_AS(ops::quantize_q8(device, small, r, 4, 32), Error);
    const ops::WeightMatrix q4_k = g.weights(gguf::GgmlType::Q4_K, 4, 256, buffer);
    CHECK_THROWS_WITH_AS(ops::matmul(device, q4_k, r, r, 9, false, ops::MatmulConfig{.int8_activations = true}),
                         doctest::Contains("int8 activations"), Error);

    for (uint32_t k : {0u, ops::max_top_k + 1, 101u})
        CHECK_THROWS_AS(ops::top_k(device, {.n = 100, .n_rows = 1, .k = k}, r, r, r, r), Error);

    CHECK_THROWS_AS(ops::kv_write(device, ops::KvType::F16, {.n_tokens = 1, .row_size = 63, .n_cells = 4}, r, r, r), Error);
    CHECK_THROWS_AS(ops::kv_write(device, ops::KvType::Q8_0, {.n_tokens = 1, .row_size = 48, .n_cells = 4}, r, r, r), Error);
    CHECK_THROWS_AS(ops::kv_write(device, ops::KvType::F16, {.n_tokens = 1, .row_size = 64, .n_cells = 1000}, r, r, r), Error);

    const ops::AttentionBuffers buffers{r, r, r, r, r, r};
    const ops::AttentionShape shape{.n_tokens = 1, .n_cells = 4};
    CHECK_THROWS_WITH_AS(ops::attention_decode(device, {.n_head = 2, .n_head_kv = 1, .head_dim_k = 16, .head_dim_v = 16},
                                               shape, {r, r, r, r, r, small.sub(0, 4)}),
                         doctest::Contains("scratch of 4 bytes"), Error);
    CHECK_THROWS_WITH_AS(ops::attention_decode(device, {.n_head = 6, .n_head_kv = 4, .head_dim_k = 8, .head_dim_v = 8},
                                               shape, buffers),
                         doctest::Contains("attention_decode"), Error);
    CHECK_THROWS_AS(ops::attention_prefill(device, {.n_head = 2, .n_head_kv = 1, .head_dim_k = 6, .head_dim_v = 8}, shape,
                                           buffers),
                    Error);
    CHECK_THROWS_AS(ops::attention_decode(device, {.n_head = 2, .n_head_kv = 1, .head_dim_k = 16, .head_dim_v = 16},
                                          {.n_tokens = 1, .n_cells = 4, .kv_type = ops::KvType::Q8_0}, buffers),
                    Error);
    CHECK_THROWS_AS(ops::attention_prefill(device, {.n_head = 2, .n_head_kv = 1, .head_dim_k = 64, .head_dim_v = 64},
                                           {.n_tokens = 1, .n_cells = 1000}, buffers),
                    Error);

    const ops::WeightMatrix weights = g.weights(gguf::GgmlType::Q4_0, 2, 32, buffer);
    CHECK_THROWS_AS(ops::get_rows(device, weights, r, small, 10), Error);
    CHECK_THROWS_AS(ops::get_rows(device, g.weights(gguf::GgmlType::Q4_0, 2, 48, buffer), r, r, 1), Error);
}
