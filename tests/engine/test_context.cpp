// Context that never ends a session, on the bundled stories260K: generate stops at a full context or
// shifts it as llama.cpp does, and a conversation leaves out its oldest turns (never the system
// prompt) or refuses a turn too long for the context, without running anything for it.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>

#include "core/error.h"
#include "engine/conversation.h"
#include "engine/engine.h"
#include "engine/generation.h"

namespace vkllm::engine {
namespace {

EngineOptions stories(uint32_t n_ctx) {
    return {.model_path = (std::filesystem::path(VKLLM_SOURCE_DIR) / "models/stories260K.gguf").string(), .n_ctx = n_ctx};
}

sampling::SamplerParams greedy() {
    sampling::SamplerParams params;
    params.temperature = 0;
    return params;
}

float max_abs_difference(std::span<const float> a, std::span<const float> b) {
    REQUIRE(a.size() == b.size());
    float most = 0;
    for (size_t i = 0; i < a.size(); ++i) most = std::max(most, std::fabs(a[i] - b[i]));
    return most;
}

}  // namespace

TEST_CASE("shift_context keeps the first tokens, drops the oldest half of the rest, and runs the kept tail again") {
    Engine engine(stories(64));
    model::Session& session = engine.session();
    std::vector<int32_t> tokens = engine.tokenizer().tokenize(
        "Once upon a time there was a little girl named Lily who loved to play in the park with her dog and her "
        "friends every day after school, and one day she found a big red ball under a tree near the pond",
        true, false);
    REQUIRE(tokens.size() >= 64);
    tokens.resize(64);
    session.eval(tokens);
    shift_context(session, 0, 4);
    // 60 after the kept 4: the oldest 30 dropped, the newest 30 run again at positions 4..33.
    REQUIRE(session.n_past() == 34);
    std::vector<int32_t> kept(tokens.begin(), tokens.begin() + 4);
    kept.insert(kept.end(), tokens.begin() + 34, tokens.end());
    CHECK(std::vector<int32_t>(session.history(0).begin(), session.history(0).end()) == kept);
    const int32_t next = 42;
    const std::span<const float> shifted_logits = session.eval(std::span(&next, 1));
    const std::vector<float> shifted(shifted_logits.begin(), shifted_logits.end());

    // The same as running the kept tokens from the start.
    Engine fresh(stories(64));
    fresh.session().eval(kept);
    CHECK(max_abs_difference(shifted, fresh.session().eval(std::span(&next, 1))) < 1e-3f);

    session.truncate(5);
    CHECK_THROWS_WITH_AS(shift_context(session, 0, 4), doctest::Contains("leaves none to drop"), vkllm::Error);
}

TEST_CASE("generate stops at a full context, one token after the last position; with a shift it goes on") {
    Engine engine(stories(32));
    model::Session& session = engine.session();
    const std::vector<int32_t> prompt = engine.tokenizer().tokenize("Once upon", true, false);
    const auto run = [&](const ContextShift& shift) {
        session.truncate(0);
        sampling::Sampler sampler(greedy());
        TextStream stream(engine.tokenizer(), {.max_tokens = 100, .ignore_eos = true});
        return generate(session, sampler, stream, session.eval(prompt), [](std::string_view) { return true; }, shift);
    };
    const Generated stopped = run({});
    CHECK(stopped.finish == FinishReason::Context);
    CHECK(stopped.tokens.size() == 32 - prompt.size() + 1);  // the last sampled token needs no position
    CHECK(stopped.context_shifts == 0);

    const Generated shifted = run({.enabled = true, .n_keep = 1});
    CHECK(shifted.finish == FinishReason::Length);
    CHECK(shifted.tokens.size() == 100);
    CHECK(shifted.context_shifts >= 3);
    CHECK(session.n_past() <= 32);
    CHECK(session.history(0)[0] == prompt[0]);  // BOS kept
    CHECK(std::equal(stopped.tokens.begin(), stopped.tokens.end() - 1, shifted.tokens.begin()));  // the same until the first shift
}

TEST_CASE("a conversation refuses a turn too long for the context and leaves out its oldest turns, never the system prompt") {
    Engine engine(stories(128));
    Conversation conversation(engine, "You tell stories.");
    std::string long_turn;
    for (int i = 0; i < 200; ++i) long_turn += "word ";
    const TurnPrompt refused = conversation.add_user_turn(long_turn, 16);
    CHECK_FALSE(refused.accepted);
    CHECK(refused.n_positions > 128);
    REQUIRE(conversation.messages().size() == 1);  // the system prompt alone
    CHECK(engine.session().n_past() == 0);         // nothing ran

    uint32_t dropped = 0;
    for (int turn = 0; turn < 8; ++turn) {
        const TurnPrompt prompt = conversation.add_user_turn("Tell me about the cat number " + std::to_string(turn), 16);
        REQUIRE(prompt.accepted);
        CHECK(prompt.n_positions + 16 <= 128);
        CHECK(engine.session().n_past() == prompt.n_positions);
        dropped += prompt.dropped_turns;
        sampling::Sampler sampler(greedy());
        TextStream stream(engine.tokenizer(), {.max_tokens = 16, .ignore_eos = true});
        std::string reply;
        generate(engine.session(), sampler, stream, prompt.logits, [&](std::string_view text) {
            reply += text;
            return true;
        });
        conversation.add_reply(reply);
        CHECK(conversation.messages()[0]["role"] == "system");
        CHECK(conversation.messages().back()["role"] == "assistant");
    }
    CHECK(dropped > 0);
    CHECK(conversation.messages().size() < 1 + 2 * 8);
    conversation.clear();
    CHECK(conversation.messages().size() == 1);
}

}  // namespace vkllm::engine
