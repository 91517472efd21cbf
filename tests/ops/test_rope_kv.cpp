// rope_kv_write (RoPE on q and k, the K/V cache writes, one pass) against the references run in turn:
// ref::rope on q and on k, ref::attn_temp_scale on q (the attention temperature), then ref::kv_write of
// rope(k) and v.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "op_harness.h"
#include "ops/kv_write.h"
#include "ops/ref/attention_ref.h"
#include "ops/ref/rope_ref.h"
#include "ops/rope.h"

using namespace vkllm;

namespace {

struct RopeKvCase {
    const char* name;
    ops::RopeConfig rope;
    ops::KvType type;
    uint32_t n_tokens, n_head, n_head_kv, head_dim, head_dim_v, extra;  // extra: floats after v in a row
    float temperature_beta = 0;  // with temperature_length 8192
};

// Rows [n_tokens] of `width` floats cut from qkv at `offset` in each token's row.
std::vector<float> part(std::span<const float> qkv, uint32_t n_tokens, uint32_t stride, uint32_t offset,
                        uint32_t width) {
    std::vector<float> rows(size_t(n_tokens) * width);
    for (uint32_t t = 0; t < n_tokens; ++t)
        std::copy_n(&qkv[size_t(t) * stride + offset], width, &rows[size_t(t) * width]);
    return rows;
}

void check_rope_kv(const RopeKvCase& c, uint64_t seed) {
    const std::string name = c.name;
    CAPTURE(name);
    const uint32_t q_row = c.n_head * c.head_dim, k_row = c.n_head_kv * c.head_dim, v_row = c.n_head_kv * c.head_dim_v;
    const uint32_t stride = q_row + k_row + v_row + c.extra, n_cells = 40;
    std::vector<float> qkv = test::random_floats(size_t(c.n_tokens) * stride, seed, -4.0f, 4.0f);
    std::vector<int32_t> positions = test::random_ints(c.n_tokens, seed + 1, 0, 1000000);
    std::vector<int32_t> slots(c.n_tokens);
    for (uint32_t t = 0; t < c.n_tokens; ++t) slots[t] = int32_t((7 * t + 3) % n_cells);
    slots.back() = int32_t(n_cells) + 5;  // outside the cache: skipped

    // Reference: rotate q and k, write k and v of the tokens whose slot is inside the cache.
    std::vector<float> q = part(qkv, c.n_tokens, stride, 0, q_row), k = part(qkv, c.n_tokens, stride, q_row, k_row);
    std::vector<float> v = part(qkv, c.n_tokens, stride, q_row + k_row, v_row);
    ref::rope(q, c.head_dim, c.n_head, positions, c.rope);
    ref::rope(k, c.head_dim, c.n_head_kv, positions, c.rope);
    constexpr uint32_t temperature_length = 8192;
    if (c.temperature_beta != 0) ref::attn_temp_scale(q, q_row, positions, c.temperature_beta, temperature_length);
    std::vector<float> want_qkv = qkv;
    for (uint32_t t = 0; t < c.n_tokens; ++t) std::copy_n(&q[size_t(t) * q_row], q_row, &want_qkv[size_t(t) * stride]);
    const uint32_t kept = c.n_tokens - 1;
    const std::span<const int32_t> kept_slots(slots.data(), kept);
    std::vector<std::byte> want_k(ops::kv_cache_bytes(c.type, n_cells, k_row));
    std::vector<std::byte> want_v(ops::kv_cache_bytes(c.type, n_cells, v_row));
    ref::kv_write(c.type, std::span(k).first(size_t(kept) * k_row), kept_slots, k_row, want_k);
    ref::kv_write(c.type, std::span(v).first(size_t(kept) * v_row), kept_slots, v_row, want_v);

    const std::vector<uint32_t> phases = ops::rope_phase_table(c.rope);
    gpu::Buffer qkv_buffer = test::upload(qkv), phase_buffer = test::upload_values(std::span(phases));
    gpu::Buffer position_buffer = test::upload_values(std::span<const int32_t>(positions));
    gpu::Buffer slot_buffer = test::upload_values(std::span<const int32_t>(slots));
    gpu::Buffer k_cache = test::zero_buffer(want_k.size()), v_cache = test::zero_buffer(want_v.size());
    const ops::RopeKvShape shape{.n_tokens = c.n_tokens, .n_head = c.n_head, .n_head_kv = c.n_head_kv,
                                 .head_dim = c.head_dim, .head_dim_v = c.head_dim_v, .token_stride = stride,
                                 .n_cells = n_cells, .temperature_beta = c.temperature_beta,
                                 .temperature_length = temperature_length};
    test::OpGraph g;
    g.run(ops::rope_kv_write(test::device(), c.rope, c.type, shape, g(phase_buffer), g(position_buffer), g(slot_buffer),
                             g(qkv_buffer), g(k_cache), g(v_cache)));

    test::check_close(test::download(qkv_buffer, qkv.size()), want_qkv, test::f32_tolerance, seed, "q rotated, k, v kept");
    // Cache values compared dequantized: an f32 rounding difference may move a value across an f16 or
    // q8_0 rounding boundary, a step f16_tolerance covers.
    const auto values = [&](const gpu::Buffer& cache, size_t bytes, uint32_t row) {
        return ref::kv_read(c.type, test::download_values<std::byte>(cache, bytes), row);
    };
    test::check_close(values(k_cache, want_k.size(), k_row), ref::kv_read(c.type, want_k, k_row), test::f16_tolerance,
                      seed, "k cache");
    test::check_close(values(v_cache, want_v.size(), v_row), ref::kv_read(c.type, want_v, v_row), test::f16_tolerance,
                      seed, "v cache");
}

}  // namespace

TEST_CASE("rope_kv_write: RoPE and both cache writes in one pass, as rope then kv_write") {
    using enum ops::KvType;
    const ops::RopeConfig normal{.n_dims = 64, .freq_base = 10000.0f};
    const ops::RopeConfig neox_partial{.n_dims = 32, .mode = ops::RopeMode::Neox, .freq_base = 1e6f};
    const ops::RopeConfig yarn{.n_dims = 64, .freq_base = 10000.0f, .freq_scale = 0.25f, .ext_factor = 1.0f,
                               .attn_factor = 0.8f, .n_ctx_orig = 4096};
    const RopeKvCase cases[] = {
        {"f16 decode", normal, F16, 2, 8, 2, 64, 64, 0},
        {"q8_0 decode", normal, Q8_0, 2, 8, 2, 64, 64, 0},
        {"f16 neox partial, wider v, padded rows", neox_partial, F16, 5, 6, 3, 64, 96, 4},
        {"q8_0 neox partial, wider v", neox_partial, Q8_0, 5, 6, 3, 64, 96, 0},
        {"q8_0 blocks across small heads", {.n_dims = 8, .freq_base = 10000.0f}, Q8_0, 3, 8, 4, 8, 8, 0},
        {"f16 yarn", yarn, F16, 4, 4, 4, 64, 64, 0},
        // The temperature scales every q dim, the unrotated ones of a partial rotation too.
        {"f16 temperature", normal, F16, 4, 8, 2, 64, 64, 4, 0.1f},
        {"q8_0 neox partial temperature", neox_partial, Q8_0, 5, 6, 3, 64, 96, 0, 0.25f},
    };
    uint64_t seed = test::base_seed() + 1300;
    for (const RopeKvCase& c : cases) check_rope_kv(c, seed++);
}

TEST_CASE("rope_kv_write refuses shapes the cache cannot take") {
    gpu::Buffer buffer = test::zero_buffer(1 << 16);
    test::OpGraph g;
    const graph::Region r = g(buffer);
    const ops::RopeConfig rope{.n_dims = 64};
    const ops::RopeKvShape shape{.n_tokens = 1, .n_head = 4, .n_head_kv = 1, .head_dim = 48, .head_dim_v = 48,
                                 .n_cells = 4};
    // 48-value k rows are not whole Q8_0 blocks; 64 rotated dims do not fit heads of 48.
    CHECK_THROWS_AS(ops::rope_kv_write(test::device(), {.n_dims = 48}, ops::KvType::Q8_0, shape, r, r, r, r, r, r),
                    Error);
    CHECK_THROWS_AS(ops::rope_kv_write(test::device(), rope, ops::KvType::F16, shape, r, r, r, r, r, r), Error);
    ops::RopeKvShape tempered = shape;
    tempered.head_dim = tempered.head_dim_v = 64;
    tempered.temperature_beta = 0.1f;  // without a length
    CHECK_THROWS_WITH_AS(ops::rope_kv_write(test::device(), rope, ops::KvType::F16, tempered, r, r, r, r, r, r),
                         "rope_kv_write: an attention temperature needs a positive length", Error);
}
