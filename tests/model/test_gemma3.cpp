// Gemma 3 against llama.cpp's logits on the fixtures (window 16, sequences ten windows long), and
// runs that must agree with each other as the circular window caches wrap: prefill chunk sizes
// around the window, and truncating to a point older than the window then continuing.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>

#include "fixture_check.h"
#include "gguf/writer.h"
#include "gpu_fixture.h"
#include "session_check.h"
#include "model/architectures.h"
#include "model/session.h"

using namespace vkllm;

namespace {

constexpr size_t n_vocab = 512;
constexpr uint32_t window = 16;  // the fixtures' attention.sliding_window



}  // namespace

// Chunks of 32 tokens: the sliding layers' caches have 47 cells and wrap three times.
TEST_CASE("gemma3 fixtures match llama.cpp's logits with circular window caches") {
    for (auto [fixture, quantized] : {std::pair{"gemma3_f32", false}, std::pair{"gemma3_softcap_f32", false},
                                      std::pair{"gemma3_q8_0_ropelinear8", true}}) {
        const std::string name = fixture;
        auto dir = test::fixture_dir(name);
        if (dir.empty()) continue;
        CAPTURE(name);
        gguf::File file = gguf::File::open(dir / "model.gguf");
        auto model = model::load_model(test::device(), file);
        const std::vector<int32_t> tokens = test::read_tokens(dir / "tokens.txt");
        REQUIRE(model::kv_layer_cells(model->kv_layout().layers[0], uint32_t(tokens.size()), 32) == window + 31);
        std::string detail;
        const std::vector<float> logits = test::session_logits(*model, tokens, 32);
        const bool passed = test::meets_fixture_criteria(logits, dir, n_vocab, quantized, detail);
        INFO(detail);
        MESSAGE(name << ": " << detail);
        CHECK(passed);
    }
}

// fp32 arithmetic, so that matmul and matvec paths agree to 1e-4 (test_llama.cpp says why).
TEST_CASE("gemma3: one chunk, chunks smaller and larger than the window, and truncate past it agree") {
    auto dir = test::fixture_dir("gemma3_f32");
    if (dir.empty()) return;
    test::Float32Kernels fp32_arithmetic;
    gguf::File file = gguf::File::open(dir / "model.gguf");
    auto model = model::load_model(test::device(), file);
    const std::vector<int32_t> tokens = test::read_tokens(dir / "tokens.txt");
    const std::vector<float> one_chunk = test::session_logits(*model, tokens, 256);  // a full cache: 160 cells
    test::check_runs_agree(one_chunk, test::session_logits(*model, tokens, 8), n_vocab, test::agreement_tolerance(8));    // 23 cells
    test::check_runs_agree(one_chunk, test::session_logits(*model, tokens, 64), n_vocab, test::agreement_tolerance(64));   // 79 cells, chunks of 4 windows
    // One token at a time every projection is a matvec and attention the decode kernel, whose sums
    // round differently (4.5e-5 before the first wrap, growing through the f16 cache to ~1.5e-4).
    test::check_runs_agree(one_chunk, test::session_logits(*model, tokens, 1), n_vocab, 3e-4);  // 16 cells

    // Run everything in chunks of 8, go back to a point older than the window (its keys were
    // overwritten) or within one chunk of the end (still held), and continue: as a fresh run does.
    for (uint32_t keep : {50u, 155u}) {
        CAPTURE(keep);
        model::Session session(test::device(), *model, {.n_ctx = uint32_t(tokens.size()), .n_ubatch = 8});
        session.eval(tokens);
        session.truncate(keep);
        CHECK(session.n_past() == keep);
        std::vector<float> continued;
        const size_t prefill = std::min<size_t>(40, tokens.size() - keep - 2);
        session.eval(std::span(tokens).subspan(keep, prefill), &continued);
        for (int32_t token : std::span(tokens).subspan(keep + prefill, 2))
            session.eval(std::span(&token, 1), &continued);
        const size_t rows = prefill + 2;
        test::check_runs_agree(continued, {one_chunk.begin() + keep * n_vocab, one_chunk.begin() + (keep + rows) * n_vocab},
                               n_vocab, test::agreement_tolerance(8));
    }
}

// docs/PERFORMANCE.md: a Gemma-3-1B-shaped model (26 layers, 1 KV head of 256, window 512; every sixth
// layer global) at context 32768 with f16 cells and chunks of 512.
TEST_CASE("gemma3 KV cache: global layers full, sliding layers W + n_ubatch - 1 cells (the 1B figure)") {
    gguf::Writer writer;
    writer.add_string("general.architecture", "gemma3");
    for (auto [key, value] : {std::pair{"context_length", 32768u}, {"embedding_length", 1152u}, {"block_count", 26u},
                              {"feed_forward_length", 6912u}, {"attention.head_count", 4u},
                              {"attention.head_count_kv", 1u}, {"attention.key_length", 256u},
                              {"attention.value_length", 256u}, {"attention.sliding_window", 512u},
                              {"vocab_size", 262144u}})
        writer.add_u32(std::string("gemma3.") + key, value);
    writer.add_f32("gemma3.attention.layer_norm_rms_epsilon", 1e-6f);
    const gguf::File file = gguf::File::from_bytes(writer.bytes(), "gemma3-1b-shape.gguf");
    const model::KvLayout layout = model::gemma3_kv_layout(file, "gemma3");
    const auto kinds = model::kv_cache_kinds(layout, 32768, 512, ops::KvType::F16);
    REQUIRE(kinds.size() == 2);
    CHECK(kinds[0].window == 0);
    CHECK(kinds[0].n_layers == 4);  // layers 5, 11, 17, 23
    CHECK(kinds[0].bytes == 4ull * 32768 * 2 * 256 * 2);
    CHECK(kinds[1].window == 512);
    CHECK(kinds[1].n_layers == 22);
    CHECK(kinds[1].n_cells == 1023);
    CHECK(kinds[1].bytes == 22ull * 1023 * 2 * 256 * 2);
    const uint64_t full = 26ull * 32768 * 2 * 256 * 2;
    const uint64_t total = model::kv_cache_bytes(layout, 32768, 512, ops::KvType::F16);
    CHECK(total == 157263872);
    CHECK(double(total) / double(full) < 0.19);
    MESSAGE("Gemma-3-1B shape at 32768 tokens: " << total / 1048576.0 << " MiB vs " << full / 1048576.0
                                                 << " MiB for full caches");
}
