// KV-cache writes and attention (decode and prefill) on the GPU against the references. Caches are
// filled by the reference writer, so GPU and reference read the same f16 or q8_0 values and the
// attention arithmetic is compared at f32 tolerance. Long caches and windows (8192+ keys, head_dim
// 128) check that the work is split: lavapipe silently stops any invocation looping past its cap.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <cstring>
#include <numeric>

#include "gguf/quants.h"
#include "op_harness.h"
#include "gpu/dispatch.h"
#include "ops/attention.h"
#include "ops/kv_write.h"
#include "ops/ref/attention_ref.h"

using namespace vkllm;

namespace {

const char* kv_name(ops::KvType type) { return type == ops::KvType::Q8_0 ? "q8_0" : "f16"; }

struct AttentionCase {
    const char* name;
    ops::AttentionConfig config;
    ops::KvType kv_type;
    uint32_t n_cells;
    std::vector<int32_t> positions;  // one query per position
    uint32_t q_stride = 0;           // queries read in place from rows this long (fused QKV)
};

// Caches of n_cells random rows written by the reference, and the queries.
struct AttentionInputs {
    std::vector<float> q;
    std::vector<std::byte> k_cache, v_cache;
};

AttentionInputs random_inputs(const AttentionCase& c, uint64_t seed) {
    const ops::AttentionConfig& config = c.config;
    const uint32_t k_row = config.n_head_kv * config.head_dim_k, v_row = config.n_head_kv * config.head_dim_v;
    AttentionInputs inputs;
    inputs.q = test::random_floats(c.positions.size() * config.n_head * config.head_dim_k, seed, -1.0f, 1.0f);
    std::vector<int32_t> cells(c.n_cells);
    std::iota(cells.begin(), cells.end(), 0);
    inputs.k_cache.resize(ops::kv_cache_bytes(c.kv_type, c.n_cells, k_row));
    inputs.v_cache.resize(ops::kv_cache_bytes(c.kv_type, c.n_cells, v_row));
    ref::kv_write(c.kv_type, test::random_floats(size_t(c.n_cells) * k_row, seed + 1, -1.0f, 1.0f), cells, k_row,
                  inputs.k_cache);
    ref::kv_write(c.kv_type, test::random_floats(size_t(c.n_cells) * v_row, seed + 2, -1.0f, 1.0f), cells, v_row,
                  inputs.v_cache);
    return inputs;
}

std::vector<float> reference(const AttentionCase& c, const AttentionInputs& inputs, const std::vector<int32_t>& positions) {
    const ops::AttentionConfig& config = c.config;
    const uint32_t k_row = config.n_head_kv * config.head_dim_k, v_row = config.n_head_kv * config.head_dim_v;
    std::vector<float> want(positions.size() * config.n_head * config.head_dim_v);
    ref::attention(inputs.q, ref::kv_read(c.kv_type, inputs.k_cache, k_row), ref::kv_read(c.kv_type, inputs.v_cache, v_row),
                   positions, config, want);
    return want;
}

// workers: decode's workgroups per head group (0: the device's choice; a count splits the keys as
// finely as it allows). coopmat: prefill through the cooperative-matrix kernel of that shape.
void check_attention(const AttentionCase& c, bool prefill, uint64_t seed, uint32_t workers = 0,
                     std::optional<ops::CoopmatShape> coopmat = std::nullopt) {
    const std::string name = c.name;
    CAPTURE(name);
    CAPTURE(prefill);
    CAPTURE(workers);
    const ops::AttentionConfig& config = c.config;
    // Under a small device profile (VKLLM_DEVICE_PROFILE) a model runs such heads' prefill through the
    // decode kernel (model/blocks.cpp); the fixture tests cover that path.
    if (prefill && !coopmat && !ops::attention_prefill_supports(test::device().caps(), config)) {
        MESSAGE(name << ": the prefill kernel does not fit this device: skipped");
        return;
    }
    const AttentionInputs inputs = random_inputs(c, seed);
    const uint32_t n_tokens = uint32_t(c.positions.size());
    const ops::AttentionShape shape{.n_tokens = n_tokens, .n_cells = c.n_cells, .kv_type = c.kv_type,
                                    .q_stride = c.q_stride};
    const uint64_t scratch_bytes = prefill ? ops::attention_prefill_scratch_bytes(config, shape)
                                           : ops::attention_decode_scratch_bytes(config, shape);
    const size_t out_count = size_t(n_tokens) * config.n_head * config.head_dim_v;
    const uint32_t q_row = config.n_head * config.head_dim_k, q_stride = c.q_stride ? c.q_stride : q_row;
    std::vector<float> strided_q(size_t(n_tokens) * q_stride, 1e4f);  // large values between rows must not leak in
    for (uint32_t t = 0; t < n_tokens; ++t) std::copy_n(&inputs.q[size_t(t) * q_row], q_row, &strided_q[size_t(t) * q_stride]);
    gpu::Buffer q = test::upload(strided_q), k = test::upload_bytes(inputs.k_cache), v = test::upload_bytes(inputs.v_cache);
    gpu::Buffer positions = test::upload_values(std::span(c.positions)), scratch = test::zero_buffer(scratch_bytes);
    gpu::Buffer out = test::upload(std::vector<float>(out_count, NAN));  // every output must be written
    test::OpGraph g;
    const ops::AttentionBuffers buffers{g(q), g(k), g(v), g(positions), g(out), g(scratch)};
    g.run(prefill ? ops::attention_prefill(test::device(), config, shape, buffers, 0, coopmat)
                  : ops::attention_decode(test::device(), config, shape, buffers, workers));

    const bool float16 = prefill && (coopmat || test::device().caps().use_float16());
    test::check_close(test::download(out, out_count), reference(c, inputs, c.positions),
                      float16 ? test::f16_tolerance : test::f32_tolerance, seed, c.name);
}

std::vector<int32_t> consecutive(int32_t first, int32_t count) {
    std::vector<int32_t> positions(count);
    std::iota(positions.begin(), positions.end(), first);
    return positions;
}

}  // namespace

TEST_CASE("attention decode: GQA, f16 and q8_0 caches, sliding window, softcap, 8192+ keys") {
    const float scale_128 = 1.0f / std::sqrt(128.0f), scale_64 = 0.125f;
    const AttentionCase cases[] = {
        {"long f16", {.n_head = 8, .n_head_kv = 2, .head_dim_k = 128, .head_dim_v = 128, .scale = scale_128},
         ops::KvType::F16, 8300, {8299}},
        {"long q8_0 window", {.n_head = 4, .n_head_kv = 1, .head_dim_k = 128, .head_dim_v = 128, .scale = scale_128,
                              .n_swa = 4096}, ops::KvType::Q8_0, 9000, {8999}},
        {"few tokens softcap", {.n_head = 4, .n_head_kv = 4, .head_dim_k = 64, .head_dim_v = 64, .scale = scale_64,
                                .softcap = 3.0f}, ops::KvType::F16, 300, {0, 130, 299}, 4 * 64 + 2 * 4 * 64},
        {"head 96 q8_0", {.n_head = 6, .n_head_kv = 2, .head_dim_k = 96, .head_dim_v = 96, .scale = 0.1f},
         ops::KvType::Q8_0, 257, {255, 256}},
        {"k 192 v 128", {.n_head = 16, .n_head_kv = 1, .head_dim_k = 192, .head_dim_v = 128, .scale = 0.07f,
                         .n_swa = 100}, ops::KvType::F16, 1000, {999, 50}},
    };
    uint64_t seed = test::base_seed() + 900;
    for (const AttentionCase& c : cases) {  // as many workgroups as allowed (as on GPUs), 3, the device's choice
        check_attention(c, false, seed, UINT32_MAX);
        check_attention(c, false, seed, 3);
        check_attention(c, false, seed++, 0);
    }
}

// The fewest workgroups the op allows over a long cache: each loops over some 35000 keys, which
// lavapipe's loop cap allows only because a workgroup's loop runs once per block of keys.
TEST_CASE("attention decode: 70000 keys over the fewest workgroups") {
    const AttentionCase c{"fewest workgroups", {.n_head = 4, .n_head_kv = 1, .head_dim_k = 64, .head_dim_v = 64,
                                                .scale = 0.125f}, ops::KvType::F16, 70000, {69999}};
    check_attention(c, false, test::base_seed() + 950, 1);
}

// A session records decode once and replays it for every token, and nothing one run leaves behind may
// change the next: before each replay the scratch is filled with NaN (what a bad run could leave, or
// another pass sharing the memory), and each result must still be the reference's. Positions move
// across block boundaries, to a few keys (most workgroups find no share of them and leave at once),
// around a circular window cache, and below 0.
TEST_CASE("attention decode: one recording replayed over changing positions, whatever its scratch holds") {
    const AttentionCase c{"replayed", {.n_head = 8, .n_head_kv = 2, .head_dim_k = 64, .head_dim_v = 64, .scale = 0.125f,
                                       .softcap = 5.0f, .n_swa = 700}, ops::KvType::Q8_0, 1000, {0, 0}};
    const ops::AttentionShape shape{.n_tokens = 2, .n_cells = c.n_cells, .kv_type = c.kv_type};
    const uint64_t seed = test::base_seed() + 1200;
    const AttentionInputs inputs = random_inputs(c, seed);
    const size_t out_count = size_t(shape.n_tokens) * c.config.n_head * c.config.head_dim_v;
    gpu::Buffer q = test::upload(inputs.q), k = test::upload_bytes(inputs.k_cache), v = test::upload_bytes(inputs.v_cache);
    gpu::Buffer positions = test::device().allocator().create(shape.n_tokens * 4, gpu::MemoryDomain::DeviceMapped);
    gpu::Buffer scratch = test::zero_buffer(ops::attention_decode_scratch_bytes(c.config, shape));
    gpu::Buffer out = test::zero_buffer(out_count * 4);
    const std::vector<std::vector<int32_t>> steps = {{998, 999}, {0, 1}, {127, 128}, {-1, 300}, {4999, 5000},
                                                     {699, 700}, {128, 129}, {-3, -2}, {998, 999}};
    for (uint32_t workers : {UINT32_MAX, 3u, 0u}) {
        CAPTURE(workers);
        test::OpGraph g;
        const ops::AttentionBuffers buffers{g(q), g(k), g(v), g(positions), g(out), g(scratch)};
        graph::BakedGraph baked = g.bake(ops::attention_decode(test::device(), c.config, shape, buffers, workers));
        gpu::Commands poison(test::device());
        for (const std::vector<int32_t>& step : steps) {
            CAPTURE(step[1]);
            positions.write(0, std::as_bytes(std::span(step)));
            poison.fill(scratch.range(), 0x7fc00000u).fill(out.range(), 0x7fc00000u).submit_and_wait();
            baked.replay();
            test::check_close(test::download(out, out_count), reference(c, inputs, step), test::f32_tolerance, seed,
                              c.name);
        }
    }
}

// A decode step over several sequences (AttentionShape::seq_cells): query t is its own sequence's one
// token, over the n_cells cells of its block (blocks seq_cells apart, with cells between them that no
// query may read), its position its sequence's last; a circular window wraps per sequence, a negative
// position (a padding row) gives zeros. MLA reads V as each K row's first values (v_from_k).
TEST_CASE("attention decode: one step for several sequences, each over its own cells") {
    struct SequencesCase {
        const char* name;
        ops::AttentionConfig config;
        uint32_t n_cells, seq_cells;
        std::vector<int32_t> positions;  // one query per sequence
        bool v_from_k = false;
    };
    const SequencesCase cases[] = {
        {"gqa", {.n_head = 8, .n_head_kv = 2, .head_dim_k = 64, .head_dim_v = 64, .scale = 0.125f}, 300, 304,
         {299, 0, 150, 17, 298}},
        {"window, softcap, padding row", {.n_head = 4, .n_head_kv = 1, .head_dim_k = 128, .head_dim_v = 128,
                                          .scale = 0.088f, .softcap = 20.0f, .n_swa = 100}, 100, 112, {5000, 99, 250, -1}},
        {"latent: v from k", {.n_head = 16, .n_head_kv = 1, .head_dim_k = 96, .head_dim_v = 64, .scale = 0.1f}, 520, 528,
         {519, 3, 260}, true},
    };
    uint64_t seed = test::base_seed() + 1250;
    for (const SequencesCase& c : cases) {
        const std::string name = c.name;
        CAPTURE(name);
        const ops::AttentionConfig& config = c.config;
        const uint32_t n_tokens = uint32_t(c.positions.size()), all_cells = n_tokens * c.seq_cells;
        const uint32_t k_row = config.n_head_kv * config.head_dim_k;
        const uint32_t v_row = c.v_from_k ? k_row : config.n_head_kv * config.head_dim_v;
        const std::vector<float> q = test::random_floats(size_t(n_tokens) * config.n_head * config.head_dim_k, seed,
                                                         -1.0f, 1.0f);
        std::vector<int32_t> cells(all_cells);
        std::iota(cells.begin(), cells.end(), 0);
        std::vector<std::byte> k_cache(ops::kv_cache_bytes(ops::KvType::F16, all_cells, k_row));
        std::vector<std::byte> v_cache(ops::kv_cache_bytes(ops::KvType::F16, all_cells, v_row));
        ref::kv_write(ops::KvType::F16, test::random_floats(size_t(all_cells) * k_row, seed + 1, -1.0f, 1.0f), cells,
                      k_row, k_cache);
        ref::kv_write(ops::KvType::F16, test::random_floats(size_t(all_cells) * v_row, seed + 2, -1.0f, 1.0f), cells,
                      v_row, v_cache);
        if (c.v_from_k) v_cache = k_cache;
        const std::vector<float> k_values = ref::kv_read(ops::KvType::F16, k_cache, k_row);
        const std::vector<float> v_values = ref::kv_read(ops::KvType::F16, v_cache, v_row);

        // Each sequence alone: its block's cells, V rows cut to the heads' values.
        const uint32_t out_row = config.n_head * config.head_dim_v, q_row = config.n_head * config.head_dim_k;
        const uint32_t v_heads = config.n_head_kv * config.head_dim_v;
        std::vector<float> want(size_t(n_tokens) * out_row);
        for (uint32_t t = 0; t < n_tokens; ++t) {
            const size_t first = size_t(t) * c.seq_cells;
            std::vector<float> v_block(size_t(c.n_cells) * v_heads);
            for (uint32_t cell = 0; cell < c.n_cells; ++cell)
                std::copy_n(&v_values[(first + cell) * v_row], v_heads, &v_block[size_t(cell) * v_heads]);
            ref::attention(std::span(q).subspan(size_t(t) * q_row, q_row),
                           std::span(k_values).subspan(first * k_row, size_t(c.n_cells) * k_row), v_block,
                           std::span(c.positions).subspan(t, 1), config,
                           std::span(want).subspan(size_t(t) * out_row, out_row));
        }

        const ops::AttentionShape shape{.n_tokens = n_tokens, .n_cells = c.n_cells, .kv_type = ops::KvType::F16,
                                        .v_stride = c.v_from_k ? k_row : 0, .seq_cells = c.seq_cells};
        gpu::Buffer q_buffer = test::upload(q), k = test::upload_bytes(k_cache), v = test::upload_bytes(v_cache);
        gpu::Buffer positions = test::upload_values(std::span(c.positions));
        gpu::Buffer scratch = test::zero_buffer(ops::attention_decode_scratch_bytes(config, shape));
        for (uint32_t workers : {UINT32_MAX, 3u, 0u}) {
            CAPTURE(workers);
            gpu::Buffer out = test::upload(std::vector<float>(want.size(), NAN));
            test::OpGraph g;
            g.run(ops::attention_decode(test::device(), config, shape,
                                        {g(q_buffer), g(k), g(v), g(positions), g(out), g(scratch)}, workers));
            test::check_close(test::download(out, want.size()), want, test::f32_tolerance, seed, c.name);
        }
        seed += 3;
    }
}

// Queries of their own sequences: f16 caches only, blocks no shorter than a sequence's cells, decode only.
TEST_CASE("attention over several sequences refuses what it cannot take") {
    const ops::AttentionConfig config{.n_head = 4, .n_head_kv = 1, .head_dim_k = 64, .head_dim_v = 64, .scale = 0.125f};
    gpu::Buffer buffer = test::zero_buffer(1 << 20);
    test::OpGraph g;
    const ops::AttentionBuffers buffers{g(buffer), g(buffer), g(buffer), g(buffer), g(buffer), g(buffer)};
    const auto decode = [&](ops::AttentionShape shape) { return ops::attention_decode(test::device(), config, shape, buffers); };
    CHECK_THROWS_WITH_AS(decode({.n_tokens = 2, .n_cells = 64, .kv_type = ops::KvType::Q8_0, .seq_cells = 64}),
                         "attention_decode: queries of their own sequences need an f16 cache", Error);
    CHECK_THROWS_WITH_AS(decode({.n_tokens = 2, .n_cells = 64, .seq_cells = 32}),
                         "attention_decode: sequences 32 cells apart cannot hold 64 cells each", Error);
    if (ops::attention_prefill_supports(test::device().caps(), config))
        CHECK_THROWS_WITH_AS(ops::attention_prefill(test::device(), config, {.n_tokens = 2, .n_cells = 64, .seq_cells = 64},
                                                    buffers),
                             "attention_prefill: queries of their own sequences take attention_decode", Error);
}

// Passes no query sees (before a window, past the batch in a long cache) get no workgroups.
TEST_CASE("attention prefill: causal batches, windows across passes, 8192+ and 32k keys") {
    const float scale_128 = 1.0f / std::sqrt(128.0f);
    const AttentionCase cases[] = {
        {"prompt f16", {.n_head = 8, .n_head_kv = 2, .head_dim_k = 128, .head_dim_v = 128, .scale = scale_128},
         ops::KvType::F16, 80, consecutive(0, 70), 8 * 128 + 2 * 2 * 128},
        {"q8_0 window", {.n_head = 4, .n_head_kv = 2, .head_dim_k = 64, .head_dim_v = 64, .scale = 0.125f,
                         .n_swa = 37}, ops::KvType::Q8_0, 5100, consecutive(5000, 33)},
        {"long f16 softcap", {.n_head = 4, .n_head_kv = 1, .head_dim_k = 128, .head_dim_v = 128, .scale = scale_128,
                              .softcap = 20.0f}, ops::KvType::F16, 8300, consecutive(8190, 19)},
        {"32k keys", {.n_head = 2, .n_head_kv = 1, .head_dim_k = 128, .head_dim_v = 128, .scale = scale_128},
         ops::KvType::F16, 33000, consecutive(32990, 4)},
        {"window over passes", {.n_head = 2, .n_head_kv = 1, .head_dim_k = 256, .head_dim_v = 256, .scale = 0.06f,
                                .n_swa = 3000}, ops::KvType::Q8_0, 6000, consecutive(5950, 9)},
        {"first keys of 40000 cells", {.n_head = 2, .n_head_kv = 1, .head_dim_k = 64, .head_dim_v = 64,
                                       .scale = 0.125f}, ops::KvType::F16, 40000, consecutive(0, 20)},
    };
    uint64_t seed = test::base_seed() + 1000;
    for (const AttentionCase& c : cases) check_attention(c, true, seed++);
}

// A sliding window of W in a circular cache of W + n_tokens - 1 cells (position p at cell p mod
// n_cells), long past its first wrap; and non-causal batches, where every query sees the whole batch.
TEST_CASE("attention over a circular window cache and non-causal batches, decode and prefill") {
    const float scale_128 = 1.0f / std::sqrt(128.0f);
    const AttentionCase decode_cases[] = {
        {"window 100, one token", {.n_head = 4, .n_head_kv = 2, .head_dim_k = 64, .head_dim_v = 64, .scale = 0.125f,
                                   .n_swa = 100}, ops::KvType::F16, 100, {5000}},
        {"window 100, 3 tokens", {.n_head = 4, .n_head_kv = 2, .head_dim_k = 64, .head_dim_v = 64, .scale = 0.125f,
                                  .n_swa = 100}, ops::KvType::Q8_0, 102, consecutive(7001, 3)},
        {"window 9000", {.n_head = 4, .n_head_kv = 1, .head_dim_k = 128, .head_dim_v = 128, .scale = scale_128,
                         .n_swa = 9000}, ops::KvType::F16, 9000, {40000}},
        {"not causal", {.n_head = 4, .n_head_kv = 2, .head_dim_k = 64, .head_dim_v = 64, .scale = 0.125f,
                        .causal = false}, ops::KvType::F16, 300, consecutive(250, 4)},
    };
    uint64_t seed = test::base_seed() + 1100;
    for (const AttentionCase& c : decode_cases) {
        check_attention(c, false, seed, UINT32_MAX);
        check_attention(c, false, seed, 3);
        check_attention(c, false, seed++, 0);
    }
    const AttentionCase prefill_cases[] = {
        {"window 37, chunk 33", {.n_head = 4, .n_head_kv = 2, .head_dim_k = 64, .head_dim_v = 64, .scale = 0.125f,
                                 .n_swa = 37}, ops::KvType::Q8_0, 37 + 33 - 1, consecutive(5000, 33)},
        {"chunk 64 past window 16", {.n_head = 2, .n_head_kv = 1, .head_dim_k = 32, .head_dim_v = 32, .scale = 0.2f,
                                     .softcap = 10.0f, .n_swa = 16}, ops::KvType::F16, 16 + 64 - 1, consecutive(300, 64)},
        {"window 8192 over passes", {.n_head = 2, .n_head_kv = 1, .head_dim_k = 128, .head_dim_v = 128,
                                     .scale = scale_128, .n_swa = 8192}, ops::KvType::F16, 8192 + 16 - 1,
         consecutive(30000, 16)},
        {"not causal", {.n_head = 4, .n_head_kv = 2, .head_dim_k = 64, .head_dim_v = 64, .scale = 0.125f,
                        .causal = false}, ops::KvType::F16, 300, consecutive(40, 70)},
        {"not causal, window 16", {.n_head = 2, .n_head_kv = 2, .head_dim_k = 32, .head_dim_v = 32, .scale = 0.2f,
                                   .n_swa = 16, .causal = false}, ops::KvType::F16, 16 + 20 - 1, consecutive(100, 20)},
    };
    for (const AttentionCase& c : prefill_cases) check_attention(c, true, seed++);
}

// The cooperative-matrix prefill kernel (ops/coopmat.h), the device's where it has matrix units, else
// its emulated build (each product in plain arithmetic): a KV head's query heads as rows (groups of 4
// and of 3, rows straddling tokens), f16 and q8_0 caches, a window across the boundary of two passes
// (rows resuming), softcaps, a circular cache, non-causal batches. Emulated products loop over their
// elements, so each workgroup sees a few tiles of keys: lavapipe stops an invocation past 65,535 loop
// iterations (lavapipe.md).
TEST_CASE("attention prefill on cooperative matrices: GQA rows, caches, windows, passes") {
    const std::optional<ops::CoopmatShape> shape = test::coopmat_under_test();
    if (!shape) return;
    const AttentionCase cases[] = {
        {"prompt f16, group 4", {.n_head = 8, .n_head_kv = 2, .head_dim_k = 64, .head_dim_v = 64, .scale = 0.125f},
         ops::KvType::F16, 80, consecutive(0, 70), 8 * 64 + 2 * 2 * 64},
        {"group 3, 32 dims, softcap", {.n_head = 6, .n_head_kv = 2, .head_dim_k = 32, .head_dim_v = 32, .scale = 0.2f,
                                       .softcap = 10.0f}, ops::KvType::F16, 50, consecutive(7, 43)},
        {"q8_0 window across passes", {.n_head = 4, .n_head_kv = 2, .head_dim_k = 64, .head_dim_v = 64,
                                       .scale = 0.125f, .n_swa = 40}, ops::KvType::Q8_0, 2100, consecutive(2060, 9)},
        {"128 dims, circular window", {.n_head = 2, .n_head_kv = 1, .head_dim_k = 128, .head_dim_v = 128,
                                       .scale = 0.09f, .n_swa = 37}, ops::KvType::Q8_0, 37 + 20 - 1,
         consecutive(5000, 20)},
        {"not causal", {.n_head = 4, .n_head_kv = 2, .head_dim_k = 32, .head_dim_v = 32, .scale = 0.2f,
                        .causal = false}, ops::KvType::F16, 300, consecutive(40, 70)},
    };
    uint64_t seed = test::base_seed() + 1200;
    for (const AttentionCase& c : cases) check_attention(c, true, seed++, 0, shape);
}

TEST_CASE("kv_write: f16 bits as llama.cpp rounds them, q8_0 blocks, slots from a buffer") {
    uint64_t seed = test::base_seed() + 800;
    for (ops::KvType type : {ops::KvType::F16, ops::KvType::Q8_0}) {
        const std::string cache_type = kv_name(type);
        CAPTURE(cache_type);
        const uint32_t row_size = 2 * 96, stride = 3 * 96 + 4, n_cells = 50, n_tokens = 7;
        std::vector<float> rows = test::random_floats(size_t(n_tokens) * stride, seed++, -8.0f, 8.0f);
        rows[3] = 1e-7f;      // an f16 subnormal
        rows[4] = 70000.0f;   // rounds to inf in f16 (q8_0: a large block scale)
        rows[5] = 2.0009765625f * 1.0000001f;  // just past a tie
        const std::vector<int32_t> slots = {4, 49, 0, 17, 60, 18, 3};  // 60 is outside: skipped
        std::vector<float> packed(size_t(n_tokens) * row_size);
        for (uint32_t t = 0; t < n_tokens; ++t)
            std::copy_n(&rows[size_t(t) * stride], row_size, &packed[size_t(t) * row_size]);
        std::vector<int32_t> in_range_slots = slots;
        std::vector<float> in_range_rows = packed;
        in_range_slots.erase(in_range_slots.begin() + 4);
        in_range_rows.erase(in_range_rows.begin() + 4 * row_size, in_range_rows.begin() + 5 * row_size);

        const uint64_t bytes = ops::kv_cache_bytes(type, n_cells, row_size);
        std::vector<std::byte> want(bytes);
        for (size_t i = 0; i < bytes; ++i) want[i] = std::byte(i * 7 % 61);  // finite f16 and q8_0 values; cells not written keep them
        gpu::Buffer cache = test::upload_bytes(want);
        ref::kv_write(type, in_range_rows, in_range_slots, row_size, want);
        gpu::Buffer row_buffer = test::upload(rows), slot_buffer = test::upload_values(std::span(slots));
        test::OpGraph g;
        g.run(ops::kv_write(test::device(), type,
                            {.n_tokens = n_tokens, .row_size = row_size, .src_stride = stride, .n_cells = n_cells},
                            g(row_buffer), g(slot_buffer), g(cache)));
        const std::vector<std::byte> got = test::download_values<std::byte>(cache, bytes);
        if (type == ops::KvType::F16) {
            CHECK(std::memcmp(got.data(), want.data(), bytes) == 0);
        } else {
            // Quants may differ by one step where x / d lands on a rounding tie in another rounding.
            const std::vector<float> got_values = ref::kv_read(type, got, row_size);
            const std::vector<float> want_values = ref::kv_read(type, want, row_size);
            test::check_close(got_values, want_values, test::f16_tolerance, seed, "kv_write q8_0");
        }
    }
}
