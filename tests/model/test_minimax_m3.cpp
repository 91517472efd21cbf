// MiniMax-M3 against llama.cpp's logits on the minimax_m3_f32 fixture: blocks of 16 cells, top 3,
// so from position 48 on each query attends to a subset of the cache (dense attention is off by up
// to ~15 in the logits there, so only the sparse path passes). Then the prompt in one chunk, in
// small chunks and token by token: the indexer selects the same blocks, so the logits agree.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>

#include "fixture_check.h"
#include "gguf/reader.h"
#include "gpu_fixture.h"
#include "model/session.h"

using namespace vkllm;

namespace {

constexpr size_t n_vocab = 512;

std::vector<float> logits_with(const model::Model& model, std::span<const int32_t> tokens, uint32_t n_ubatch,
                               uint32_t n_ctx) {
    model::Session session(test::device(), model, {.n_ctx = n_ctx, .n_ubatch = n_ubatch});
    std::vector<float> logits;
    session.eval(tokens, &logits);
    return logits;
}

}  // namespace

TEST_CASE("minimax-m3 fixture: sparse attention and experts match llama.cpp, prompt and greedy decode") {
    const auto dir = test::fixture_dir("minimax_m3_f32");
    if (dir.empty()) return;
    gguf::File file = gguf::File::open(dir / "model.gguf");
    auto model = model::load_model(test::device(), file);
    const std::vector<int32_t> tokens = test::read_tokens(dir / "tokens.txt");
    const std::vector<int32_t> greedy = test::read_tokens(dir / "greedy.txt");

    // llama.cpp's context of 512 cells; the prompt as one batch, then the greedy tokens one by one.
    model::Session session(test::device(), *model, {.n_ctx = 512});
    std::vector<float> prompt_logits, decode_logits;
    session.eval(tokens, &prompt_logits);
    decode_logits.assign(prompt_logits.end() - n_vocab, prompt_logits.end());
    for (size_t i = 0; i + 1 < greedy.size(); ++i) session.eval(std::span(&greedy[i], 1), &decode_logits);

    std::string prompt_detail, decode_detail;
    const bool prompt_passes = test::meets_fixture_criteria(prompt_logits, dir, n_vocab, false, prompt_detail);
    MESSAGE("prompt: " << prompt_detail);
    CHECK(prompt_passes);
    const bool decode_passes =
        test::meets_criteria(decode_logits, dir / "greedy_logits.f32", n_vocab, false, decode_detail);
    MESSAGE("greedy decode: " << decode_detail);
    CHECK(decode_passes);
}

// fp32 arithmetic throughout, so chunkings may differ only by rounding (1e-4); a block-score tie
// broken differently would show as a larger difference, and the fixture has none closer than 5e-3.
TEST_CASE("minimax-m3: prefill in one chunk, in small chunks and token by token agree") {
    const auto dir = test::fixture_dir("minimax_m3_f32");
    if (dir.empty()) return;
    test::Float32Kernels fp32_arithmetic;
    gguf::File file = gguf::File::open(dir / "model.gguf");
    auto model = model::load_model(test::device(), file);
    const std::vector<int32_t> tokens = test::read_tokens(dir / "tokens.txt");
    const uint32_t n_ctx = uint32_t(tokens.size());
    const std::vector<float> one_chunk = logits_with(*model, tokens, 512, n_ctx);
    for (uint32_t n_ubatch : {16u, 1u}) {
        CAPTURE(n_ubatch);
        const std::vector<float> chunked = logits_with(*model, tokens, n_ubatch, n_ctx);
        REQUIRE(chunked.size() == one_chunk.size());
        size_t rows_apart = 0, argmax_differ = 0;
        double worst = 0;
        for (size_t row = 0; row < tokens.size(); ++row) {
            std::span<const float> a(one_chunk.data() + row * n_vocab, n_vocab), b(chunked.data() + row * n_vocab, n_vocab);
            const double error = test::relative_error(b, a);
            worst = std::max(worst, error);
            rows_apart += error > 1e-4;
            argmax_differ += std::ranges::max_element(a) - a.begin() != std::ranges::max_element(b) - b.begin();
        }
        MESSAGE("n_ubatch " << n_ubatch << ": worst row relative RMS " << worst);
        CHECK(rows_apart == 0);
        CHECK(argmax_differ == 0);
    }
}
