// MiniMax sparse attention on the GPU against the references: the index-key cache write, the block
// selection (scores, forced local blocks, top-k) and the attention over the selected blocks, chained
// as a model runs them (the attention reads the selection the GPU made). Long caches (33k and 300k
// cells) check that no invocation loops over the whole cache: lavapipe silently stops past its cap.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "core/error.h"
#include "op_harness.h"
#include "ops/ref/attention_ref.h"
#include "ops/ref/sparse_attention_ref.h"
#include "ops/sparse_attention.h"

using namespace vkllm;

namespace {

struct MsaCase {
    const char* name;
    ops::AttentionConfig config;
    ops::MsaConfig msa;
    ops::KvType kv_type;
    uint32_t n_cells;
    std::vector<int32_t> positions;  // one query per position
    uint32_t q_stride = 0;           // queries read in place from rows this long
};

std::vector<int32_t> consecutive(int32_t first, int32_t count) {
    std::vector<int32_t> positions(count);
    std::iota(positions.begin(), positions.end(), first);
    return positions;
}

// Rows of `row` values spread `stride` apart, with large values between them that must not leak in.
std::vector<float> strided(std::span<const float> rows, uint32_t row, uint32_t stride) {
    const size_t n = rows.size() / row;
    std::vector<float> out(n * stride, 1e4f);
    for (size_t t = 0; t < n; ++t) std::copy_n(&rows[t * row], row, &out[t * stride]);
    return out;
}

void check_msa(const MsaCase& c, uint64_t seed) {
    const std::string name = c.name;
    CAPTURE(name);
    const ops::AttentionConfig& config = c.config;
    const ops::MsaConfig& msa = c.msa;
    const uint32_t n_tokens = uint32_t(c.positions.size()), selected = ops::msa_selected(msa, c.n_cells);
    const uint32_t q_row = config.n_head * config.head_dim_k, iq_row = msa.n_index_head * msa.index_dim;
    const uint32_t k_row = config.n_head_kv * config.head_dim_k, v_row = config.n_head_kv * config.head_dim_v;

    // Index keys: the cache holds random keys and each token writes its own at its position.
    const std::vector<float> q = test::random_floats(size_t(n_tokens) * q_row, seed, -1.0f, 1.0f);
    const std::vector<float> index_q = test::random_floats(size_t(n_tokens) * iq_row, seed + 1, -1.0f, 1.0f);
    const std::vector<float> token_keys = test::random_floats(size_t(n_tokens) * msa.index_dim, seed + 2, -1.0f, 1.0f);
    std::vector<float> key_cache = test::random_floats(size_t(c.n_cells) * msa.index_dim, seed + 3, -1.0f, 1.0f);
    std::vector<std::byte> k_cache(ops::kv_cache_bytes(c.kv_type, c.n_cells, k_row));
    std::vector<std::byte> v_cache(ops::kv_cache_bytes(c.kv_type, c.n_cells, v_row));
    std::vector<int32_t> cells(c.n_cells);
    std::iota(cells.begin(), cells.end(), 0);
    ref::kv_write(c.kv_type, test::random_floats(size_t(c.n_cells) * k_row, seed + 4, -1.0f, 1.0f), cells, k_row, k_cache);
    ref::kv_write(c.kv_type, test::random_floats(size_t(c.n_cells) * v_row, seed + 5, -1.0f, 1.0f), cells, v_row, v_cache);

    const ops::MsaShape shape{.n_tokens = n_tokens, .n_cells = c.n_cells, .q_stride = iq_row + 4};
    gpu::Buffer q_buffer = test::upload(strided(q, q_row, c.q_stride ? c.q_stride : q_row));
    gpu::Buffer iq_buffer = test::upload(strided(index_q, iq_row, shape.q_stride));
    gpu::Buffer keys = test::upload(strided(token_keys, msa.index_dim, msa.index_dim + 8));
    gpu::Buffer key_cache_buffer = test::upload(key_cache), positions = test::upload_values(std::span(c.positions));
    gpu::Buffer k = test::upload_bytes(k_cache), v = test::upload_bytes(v_cache);
    const uint64_t selection_bytes = uint64_t(n_tokens) * msa.n_index_head * selected * 4;
    gpu::Buffer scores = test::zero_buffer(selection_bytes), blocks = test::zero_buffer(selection_bytes);
    gpu::Buffer scratch = test::zero_buffer(ops::msa_select_scratch_bytes(msa, shape));
    gpu::Buffer out = test::upload(std::vector<float>(size_t(n_tokens) * config.n_head * config.head_dim_v, NAN));
    test::OpGraph g;
    const ops::MsaSelection selection{g(scores), g(blocks)};

    std::vector<graph::Dispatch> passes{ops::msa_key_write(test::device(), msa, n_tokens, msa.index_dim + 8, c.n_cells,
                                                           g(keys), g(positions), g(key_cache_buffer))};
    for (graph::Dispatch& pass : ops::msa_select(test::device(), msa, shape, g(iq_buffer), g(key_cache_buffer),
                                                 g(positions), selection, g(scratch)))
        passes.push_back(std::move(pass));
    passes.push_back(
        ops::msa_attention(test::device(), config, msa,
                           {.n_tokens = n_tokens, .n_cells = c.n_cells, .kv_type = c.kv_type, .q_stride = c.q_stride},
                           {g(q_buffer), g(k), g(v), g(positions), g(out), selection}));
    g.run(passes);

    for (uint32_t t = 0; t < n_tokens; ++t)
        if (c.positions[t] < int32_t(c.n_cells))
            std::copy_n(&token_keys[size_t(t) * msa.index_dim], msa.index_dim, &key_cache[size_t(c.positions[t]) * msa.index_dim]);
    CHECK(test::download(key_cache_buffer, key_cache.size()) == key_cache);

    const ref::TopK want = ref::msa_select(ref::msa_block_scores(index_q, key_cache, c.positions, msa, c.n_cells), msa, c.n_cells);
    const std::vector<float> got_scores = test::download(scores, want.values.size());
    const std::vector<uint32_t> got_blocks = test::download_values<uint32_t>(blocks, want.indices.size());
    size_t mismatches = 0;
    for (size_t i = 0; i < want.values.size(); ++i) {
        const bool visible = want.values[i] != -INFINITY;
        if (visible != (got_scores[i] != -INFINITY) || (visible && got_blocks[i] != want.indices[i])) ++mismatches;
    }
    CHECK_MESSAGE(mismatches == 0, "seed ", seed, ": ", mismatches, " selected blocks differ");

    std::vector<float> want_out(size_t(n_tokens) * config.n_head * config.head_dim_v);
    ref::msa_attention(q, ref::kv_read(c.kv_type, k_cache, k_row), ref::kv_read(c.kv_type, v_cache, v_row), c.positions,
                       config, msa, want, c.n_cells, want_out);
    test::check_close(test::download(out, want_out.size()), want_out, test::f32_tolerance, seed, c.name);
}

}  // namespace

TEST_CASE("sparse attention: index keys, block selection and attention over the selected blocks") {
    const float scale_32 = 1.0f / std::sqrt(32.0f), scale_128 = 1.0f / std::sqrt(128.0f);
    const ops::AttentionConfig fixture{.n_head = 8, .n_head_kv = 2, .head_dim_k = 32, .head_dim_v = 32, .scale = scale_32};
    const ops::AttentionConfig minimax{.n_head = 64, .n_head_kv = 4, .head_dim_k = 128, .head_dim_v = 128, .scale = scale_128};
    const MsaCase cases[] = {
        // The fixture's shape: blocks of 16, top 3, a prompt whose early tokens see fewer than 3 blocks.
        {"prefill blocks of 16", fixture, {.n_index_head = 2, .index_dim = 32, .block_size = 16, .top_k = 3, .local_blocks = 1},
         ops::KvType::F16, 256, consecutive(0, 70), 8 * 32 + 2 * 2 * 32 + 4},
        // MiniMax-M3's attention and indexer at 33k cells: one decode query and a few prompt tokens.
        {"minimax decode 33k", minimax, {.n_index_head = 4, .index_dim = 128, .block_size = 128, .top_k = 16, .local_blocks = 1},
         ops::KvType::F16, 33000, {32999}},
        {"minimax q8_0 tokens", minimax, {.n_index_head = 4, .index_dim = 128, .block_size = 128, .top_k = 16, .local_blocks = 1},
         ops::KvType::Q8_0, 4100, {4099, 200, 2047, 127}},
        // Blocks that do not divide the workgroup or the cache, two forced blocks, top-k past the blocks.
        {"odd blocks, 2 local", {.n_head = 6, .n_head_kv = 3, .head_dim_k = 48, .head_dim_v = 64, .scale = 0.1f},
         {.n_index_head = 3, .index_dim = 20, .block_size = 24, .top_k = 4, .local_blocks = 2},
         ops::KvType::F16, 100, {99, 23, 24, 0, 60}},
        {"top-k beyond the blocks", fixture, {.n_index_head = 2, .index_dim = 32, .block_size = 16, .top_k = 8, .local_blocks = 0},
         ops::KvType::F16, 70, {69, 3, 40}},
        // 300k cells in 4688 blocks: the top-k merges chunks, and no loop spans the cache.
        {"300k cells", {.n_head = 4, .n_head_kv = 1, .head_dim_k = 64, .head_dim_v = 64, .scale = 0.125f},
         {.n_index_head = 1, .index_dim = 32, .block_size = 64, .top_k = 16, .local_blocks = 1},
         ops::KvType::F16, 300000, {299999, 150000}},
    };
    uint64_t seed = test::base_seed() + 4200;
    for (const MsaCase& c : cases) check_msa(c, seed += 10);
}

// A decode step over several sequences (seq_cells): token t selects blocks of, and attends to, the
// n_cells cells of its own block alone, as it would in a cache of its own.
TEST_CASE("sparse attention: one selection and one attention pass for several sequences") {
    const ops::AttentionConfig config{.n_head = 8, .n_head_kv = 2, .head_dim_k = 32, .head_dim_v = 32,
                                      .scale = 1.0f / std::sqrt(32.0f)};
    const ops::MsaConfig msa{.n_index_head = 2, .index_dim = 32, .block_size = 16, .top_k = 3, .local_blocks = 1};
    const uint32_t n_cells = 100, seq_cells = 104;
    const std::vector<int32_t> positions{99, 5, 47, 0};
    const uint32_t n_tokens = uint32_t(positions.size()), all_cells = n_tokens * seq_cells;
    const uint32_t q_row = config.n_head * config.head_dim_k, iq_row = msa.n_index_head * msa.index_dim;
    const uint32_t k_row = config.n_head_kv * config.head_dim_k, v_row = config.n_head_kv * config.head_dim_v;
    const uint32_t out_row = config.n_head * config.head_dim_v, selected = ops::msa_selected(msa, n_cells);
    const uint64_t seed = test::base_seed() + 4300;
    const std::vector<float> q = test::random_floats(size_t(n_tokens) * q_row, seed, -1.0f, 1.0f);
    const std::vector<float> index_q = test::random_floats(size_t(n_tokens) * iq_row, seed + 1, -1.0f, 1.0f);
    const std::vector<float> key_cache = test::random_floats(size_t(all_cells) * msa.index_dim, seed + 2, -1.0f, 1.0f);
    std::vector<int32_t> cells(all_cells);
    std::iota(cells.begin(), cells.end(), 0);
    std::vector<std::byte> k_cache(ops::kv_cache_bytes(ops::KvType::F16, all_cells, k_row));
    std::vector<std::byte> v_cache(ops::kv_cache_bytes(ops::KvType::F16, all_cells, v_row));
    ref::kv_write(ops::KvType::F16, test::random_floats(size_t(all_cells) * k_row, seed + 3, -1.0f, 1.0f), cells, k_row, k_cache);
    ref::kv_write(ops::KvType::F16, test::random_floats(size_t(all_cells) * v_row, seed + 4, -1.0f, 1.0f), cells, v_row, v_cache);
    const std::vector<float> k_values = ref::kv_read(ops::KvType::F16, k_cache, k_row);
    const std::vector<float> v_values = ref::kv_read(ops::KvType::F16, v_cache, v_row);

    const ops::MsaShape shape{.n_tokens = n_tokens, .n_cells = n_cells, .seq_cells = seq_cells};
    gpu::Buffer q_buffer = test::upload(q), iq_buffer = test::upload(index_q), keys = test::upload(key_cache);
    gpu::Buffer k = test::upload_bytes(k_cache), v = test::upload_bytes(v_cache);
    gpu::Buffer position_buffer = test::upload_values(std::span(positions));
    const uint64_t selection_bytes = uint64_t(n_tokens) * msa.n_index_head * selected * 4;
    gpu::Buffer scores = test::zero_buffer(selection_bytes), blocks = test::zero_buffer(selection_bytes);
    gpu::Buffer scratch = test::zero_buffer(ops::msa_select_scratch_bytes(msa, shape));
    gpu::Buffer out = test::upload(std::vector<float>(size_t(n_tokens) * out_row, NAN));
    test::OpGraph g;
    const ops::MsaSelection selection{g(scores), g(blocks)};
    std::vector<graph::Dispatch> passes =
        ops::msa_select(test::device(), msa, shape, g(iq_buffer), g(keys), g(position_buffer), selection, g(scratch));
    passes.push_back(ops::msa_attention(test::device(), config, msa,
                                        {.n_tokens = n_tokens, .n_cells = n_cells, .seq_cells = seq_cells},
                                        {g(q_buffer), g(k), g(v), g(position_buffer), g(out), selection}));
    g.run(passes);

    const std::vector<float> got = test::download(out, size_t(n_tokens) * out_row);
    for (uint32_t t = 0; t < n_tokens; ++t) {
        CAPTURE(t);
        const size_t first = size_t(t) * seq_cells;
        const auto block = [&](const std::vector<float>& values, uint32_t row) {
            return std::vector<float>(values.begin() + int64_t(first * row), values.begin() + int64_t((first + n_cells) * row));
        };
        const std::span<const int32_t> position(&positions[t], 1);
        const ref::TopK want_selection =
            ref::msa_select(ref::msa_block_scores(std::span(index_q).subspan(size_t(t) * iq_row, iq_row),
                                                  block(key_cache, msa.index_dim), position, msa, n_cells),
                            msa, n_cells);
        std::vector<float> want(out_row);
        ref::msa_attention(std::span(q).subspan(size_t(t) * q_row, q_row), block(k_values, k_row), block(v_values, v_row),
                           position, config, msa, want_selection, n_cells, want);
        test::check_close(std::span(got).subspan(size_t(t) * out_row, out_row), want, test::f32_tolerance, seed,
                          "sequence's own cells");
    }
}

TEST_CASE("sparse attention: invalid configurations are refused") {
    gpu::Buffer any = test::zero_buffer(1 << 16);
    const ops::MsaConfig msa{.n_index_head = 2, .index_dim = 32, .block_size = 16, .top_k = 3, .local_blocks = 1};
    const ops::AttentionConfig config{.n_head = 8, .n_head_kv = 2, .head_dim_k = 32, .head_dim_v = 32, .scale = 1.0f};
    test::OpGraph g;
    const graph::Region r = g(any);
    const ops::MsaAttentionBuffers buffers{r, r, r, r, r, {r, r}};
    ops::MsaConfig bad_dim = msa;
    bad_dim.index_dim = 30;
    CHECK_THROWS_AS(ops::msa_key_write(test::device(), bad_dim, 1, 0, 16, r, r, r), Error);
    ops::MsaConfig no_top = msa;
    no_top.top_k = 0;
    CHECK_THROWS_AS(ops::msa_select(test::device(), no_top, {.n_tokens = 1, .n_cells = 16}, r, r, r, {r, r}, r), Error);
    ops::AttentionConfig three_groups = config;
    three_groups.n_head_kv = 4;
    CHECK_THROWS_AS(ops::msa_attention(test::device(), three_groups, msa, {.n_tokens = 1, .n_cells = 16}, buffers), Error);
    CHECK_THROWS_AS(ops::msa_attention(test::device(), config, msa, {.n_tokens = 1, .n_cells = 100000}, buffers), Error);
}
