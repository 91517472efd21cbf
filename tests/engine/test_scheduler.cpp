// Continuous batching against one sequence alone: greedy requests run together (1, 4 and 8 at once,
// prompts of different lengths, prefill chunks interleaved with decode steps) give exactly the text
// each gives alone through generate() (what `vkllm run --temp 0` runs), for stories260K and an F32
// fixture of every family; a queue beyond the free sequences, cancelled requests (running or queued),
// one request's grammar or listener failing alone, and prompt prefixes reused from an earlier request.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <regex>


#include "engine/media.h"
#include "engine/scheduler.h"
#include "vision/image.h"
#include "test_main.h"

namespace vkllm::engine {
namespace {

namespace fs = std::filesystem;

struct ModelCase {
    fs::path path;
    fs::path tokens;  // a fixture's tokens.txt: prompts are slices of it; empty: tokenized text
};

std::vector<ModelCase> model_cases() {
    std::vector<ModelCase> cases{{fs::path(VKLLM_SOURCE_DIR) / "models/stories260K.gguf", {}}};
    for (const char* name : {"llama_f32", "mistral3_f32", "gemma3_f32", "mistral4_f32", "minimax_m3_f32"}) {
        const auto dir = test::shared_path(std::string("fixtures/") + name);
        if (dir) cases.push_back({*dir / "model.gguf", *dir / "tokens.txt"});
    }
    return cases;
}

// Prompts of different lengths: slices of the fixture's tokens (BOS first), or stories' openings.
std::vector<std::vector<int32_t>> prompts_for(const ModelCase& c, const tokenizer::Tokenizer& tokenizer, size_t count) {
    std::vector<std::vector<int32_t>> prompts;
    if (c.tokens.empty()) {
        const char* openings[] = {"Once upon a time", "The cat", "Lily and Ben went to the park to play with a big red ball",
                                  "One day", "Tim had a dog named Max. Max liked to run", "The sun was", "Sue wanted a",
                                  "There was a little bird who lived in a tree near the river"};
        for (size_t i = 0; i < count; ++i) prompts.push_back(tokenizer.tokenize(openings[i % 8], true, false));
        return prompts;
    }
    std::ifstream in(c.tokens);
    std::vector<int32_t> all;
    for (int32_t id; in >> id;) all.push_back(id);
    REQUIRE(all.size() > 64);
    for (size_t i = 0; i < count; ++i) {
        // Lengths 5 to 61, from different places of the sequence (Gemma 3's window is 16).
        const size_t length = 5 + (i * 23) % 57, start = 1 + (i * 37) % (all.size() - length - 1);
        std::vector<int32_t> prompt{all[0]};
        prompt.insert(prompt.end(), all.begin() + int64_t(start), all.begin() + int64_t(start + length));
        prompts.push_back(prompt);
    }
    return prompts;
}

constexpr uint32_t n_generate = 12;

GenerationLimits limits() { return {.max_tokens = n_generate}; }
sampling::SamplerParams greedy() { return {.temperature = 0}; }

// The text a prompt gives alone in a one-sequence session.
std::string alone(Engine& engine, std::span<const int32_t> prompt) {
    model::Session& session = engine.session();
    session.truncate(0);
    sampling::Sampler sampler(greedy());
    for (int32_t id : prompt) sampler.accept(id);
    TextStream stream(engine.tokenizer(), limits());
    std::string text;
    generate(session, sampler, stream, session.eval(prompt), [&](std::string_view piece) {
        text += piece;
        return true;
    });
    return text;
}

// Requests submitted together; waits for every one to finish.
struct Results {
    std::mutex mutex;
    std::condition_variable done_changed;
    std::vector<std::string> texts;
    std::vector<std::optional<Completion>> done;

    explicit Results(size_t n) : texts(n), done(n) {}

    RequestListener listener(size_t i, std::function<bool()> cancelled = {}) {
        return {.on_text = [this, i](std::string_view piece) {
                    std::lock_guard lock(mutex);
                    texts[i] += piece;
                    return true;
                },
                .on_done = [this, i](const Completion& completion) {
                    std::lock_guard lock(mutex);
                    done[i] = completion;
                    done_changed.notify_all();
                },
                .cancelled = std::move(cancelled)};
    }

    void wait() {
        std::unique_lock lock(mutex);
        const bool all = done_changed.wait_for(lock, std::chrono::minutes(5), [&] {
            return std::ranges::all_of(done, [](const auto& d) { return d.has_value(); });
        });
        REQUIRE_MESSAGE(all, "requests did not finish within 5 minutes");
    }
};

TEST_CASE("requests batched together give exactly the text each gives alone, for every family") {
    for (const ModelCase& c : model_cases()) {
        CAPTURE(c.path.string());
        Engine single({.model_path = c.path.string(), .n_ctx = 128});
        Engine batched({.model_path = c.path.string(), .n_ctx = 128, .n_seq = 8});
        const auto prompts = prompts_for(c, single.tokenizer(), 8);
        std::vector<std::string> expected;
        for (const auto& prompt : prompts) expected.push_back(alone(single, prompt));
        // Chunks of 8 make the longer prompts take several steps between the others' decode steps.
        Scheduler scheduler(batched, {.prefill_chunk = 8});
        for (size_t n : {1, 4, 8}) {
            CAPTURE(n);
            Results results(n);
            for (size_t i = 0; i < n; ++i)
                REQUIRE(scheduler.submit({prompts[i], greedy(), limits()}, results.listener(i)));
            results.wait();
            for (size_t i = 0; i < n; ++i) {
                CAPTURE(i);
                CHECK(results.texts[i] == expected[i]);
                CHECK(results.done[i]->error.empty());
                CHECK(results.done[i]->prompt_tokens == prompts[i].size());
            }
        }
    }
}

TEST_CASE("more requests than sequences wait in the queue; a cancelled one frees its sequence") {
    const fs::path stories = fs::path(VKLLM_SOURCE_DIR) / "models/stories260K.gguf";
    Engine single({.model_path = stories.string(), .n_ctx = 128});
    Engine batched({.model_path = stories.string(), .n_ctx = 128, .n_seq = 2});
    const auto prompts = prompts_for({stories, {}}, single.tokenizer(), 6);
    Scheduler scheduler(batched);
    Results results(prompts.size());
    std::atomic<bool> cancel_first{false};
    for (size_t i = 0; i < prompts.size(); ++i)
        REQUIRE(scheduler.submit({prompts[i], greedy(), {.max_tokens = i == 0 ? 10000u : n_generate}},
                                 results.listener(i, i == 0 ? std::function<bool()>([&] { return cancel_first.load(); })
                                                            : std::function<bool()>())));
    cancel_first = true;
    results.wait();
    CHECK(results.done[0]->finish == FinishReason::Cancelled);
    for (size_t i = 1; i < prompts.size(); ++i) {
        CAPTURE(i);
        CHECK(results.texts[i] == alone(single, prompts[i]));
    }
    const SchedulerMetrics metrics = scheduler.metrics();
    CHECK(metrics.requests_finished == prompts.size());
    CHECK(metrics.queued == 0);
    CHECK(metrics.active == 0);
}

TEST_CASE("a prompt that starts with what a sequence holds reuses its cells") {
    const fs::path stories = fs::path(VKLLM_SOURCE_DIR) / "models/stories260K.gguf";
    Engine single({.model_path = stories.string(), .n_ctx = 256});
    Engine batched({.model_path = stories.string(), .n_ctx = 256, .n_seq = 4});
    const std::vector<int32_t> first = single.tokenizer().tokenize("Once upon a time there was a little girl", true, false);
    Scheduler scheduler(batched);
    Results turn1(1);
    REQUIRE(scheduler.submit({first, greedy(), limits()}, turn1.listener(0)));
    turn1.wait();
    CHECK(turn1.done[0]->cached_tokens == 0);
    // The second turn re-sends the first prompt and its reply, then more.
    std::vector<int32_t> second = first;
    for (int32_t id : single.tokenizer().tokenize(turn1.texts[0] + " Then the sun came out.", false, false)) second.push_back(id);
    Results turn2(1);
    REQUIRE(scheduler.submit({second, greedy(), limits()}, turn2.listener(0)));
    turn2.wait();
    CHECK(turn2.done[0]->cached_tokens >= first.size());
    CHECK(turn2.done[0]->cached_tokens < second.size());
    CHECK(turn2.texts[0] == alone(single, second));
}

TEST_CASE("a request's grammar constrains its reply alone; its logprobs come per token; a dead grammar ends it") {
    const fs::path stories = fs::path(VKLLM_SOURCE_DIR) / "models/stories260K.gguf";
    Engine batched({.model_path = stories.string(), .n_ctx = 128, .n_seq = 2});
    const std::vector<int32_t> prompt = batched.tokenizer().tokenize("Once upon a time", true, false);
    Scheduler scheduler(batched);
    sampling::SamplerParams constrained{.temperature = 1.0f, .seed = 5, .top_logprobs = 2};
    constrained.grammar = sampling::Grammar::parse("root ::= \",\" [a-z ]{1,40} \".\"");
    Results results(2);
    std::vector<sampling::TokenLogprobs> logprobs;
    RequestListener listener = results.listener(0);
    listener.on_logprobs = [&](const sampling::TokenLogprobs& lp) { logprobs.push_back(lp); };
    REQUIRE(scheduler.submit({prompt, constrained, {.max_tokens = 100}}, listener));
    REQUIRE(scheduler.submit({prompt, greedy(), limits()}, results.listener(1)));
    results.wait();
    CHECK(std::regex_match(results.texts[0], std::regex(R"(,[a-z ]{1,40}\.)")));
    CHECK(results.done[0]->finish == FinishReason::Stop);
    CHECK(logprobs.size() == results.done[0]->completion_tokens);
    for (const sampling::TokenLogprobs& lp : logprobs) {
        CHECK(lp.sampled.logprob <= 0);
        CHECK(lp.top.size() == 2);
    }
    Engine single({.model_path = stories.string(), .n_ctx = 128});
    CHECK(results.texts[1] == alone(single, prompt));  // the other request runs unconstrained

    // A grammar whose only start logit_bias bans: the request ends with the sampler's sentence.
    sampling::SamplerParams dead{.temperature = 0};
    dead.grammar = sampling::Grammar::parse("root ::= \"x\" [a-z]*");
    const auto table = batched.token_table();
    for (int32_t id = 0; id < int32_t(table->size()); ++id)
        if (table->piece(id).starts_with("x")) dead.logit_bias.emplace_back(id, -INFINITY);
    Results failed(1);
    REQUIRE(scheduler.submit({prompt, dead, limits()}, failed.listener(0)));
    failed.wait();
    CHECK(failed.done[0]->error.starts_with("sampling: no token the grammar allows here has a finite logit"));
    CHECK(failed.done[0]->invalid_request);
    CHECK(failed.texts[0].empty());
}

TEST_CASE("what one request's grammar or listener throws ends that request alone; the others' text is unchanged") {
    const fs::path stories = fs::path(VKLLM_SOURCE_DIR) / "models/stories260K.gguf";
    Engine batched({.model_path = stories.string(), .n_ctx = 128, .n_seq = 4});
    const std::vector<int32_t> prompt = batched.tokenizer().tokenize("Once upon a time", true, false);
    Scheduler scheduler(batched);
    // Each 'a' after the letters doubles the stacks that may close it (x or y pending at every level):
    // no place of the grammar is too wide when it is parsed, but the matcher passes its 4096 stacks a
    // few tokens into the reply.
    sampling::SamplerParams ambiguous{.temperature = 0};
    ambiguous.grammar = sampling::Grammar::parse(
        "root ::= \"abcdefghijklmnopqrstuvwxyz\" e\ne ::= \"a\" e x | \"a\" e y | \"a\"\nx ::= \"a\"\ny ::= \"a\"\n");
    // Every token banned: the grammar finds nothing to take at the first token.
    sampling::SamplerParams first_token{.temperature = 0};
    first_token.grammar = sampling::Grammar::parse("root ::= [a-z]+");
    for (int32_t id = 0; id < int32_t(batched.info().n_vocab); ++id) first_token.logit_bias.emplace_back(id, -100.0f);
    Results results(4);
    RequestListener throwing = results.listener(2);
    throwing.on_text = [](std::string_view) -> bool { throw std::runtime_error("the listener broke"); };
    REQUIRE(scheduler.submit({prompt, greedy(), limits()}, results.listener(0)));
    REQUIRE(scheduler.submit({prompt, ambiguous, {.max_tokens = 64}}, results.listener(1)));  // past the letters
    REQUIRE(scheduler.submit({prompt, greedy(), limits()}, throwing));
    REQUIRE(scheduler.submit({prompt, first_token, limits()}, results.listener(3)));
    results.wait();
    Engine single({.model_path = stories.string(), .n_ctx = 128});
    CHECK(results.texts[0] == alone(single, prompt));
    CHECK(results.done[0]->error.empty());
    CHECK(results.done[1]->error.starts_with("the grammar is too ambiguous"));
    CHECK(results.done[1]->invalid_request);
    CHECK(results.done[2]->error == "the listener broke");
    CHECK_FALSE(results.done[2]->invalid_request);
    CHECK(results.done[3]->error.starts_with("sampling: no token the grammar allows here"));
    CHECK(results.done[3]->invalid_request);
    // The scheduler goes on serving.
    Results after(1);
    REQUIRE(scheduler.submit({prompt, greedy(), limits()}, after.listener(0)));
    after.wait();
    CHECK(after.texts[0] == results.texts[0]);
}

TEST_CASE("a queued request whose client left ends at once, without waiting for a sequence") {
    const fs::path stories = fs::path(VKLLM_SOURCE_DIR) / "models/stories260K.gguf";
    Engine batched({.model_path = stories.string(), .n_ctx = 256, .n_seq = 1});
    const std::vector<int32_t> prompt = batched.tokenizer().tokenize("Once upon a time", true, false);
    Scheduler scheduler(batched);
    Results results(2);
    std::atomic<bool> first_gone{false}, second_gone{false};
    REQUIRE(scheduler.submit({prompt, greedy(), {.ignore_eos = true}}, results.listener(0, [&] { return first_gone.load(); })));
    REQUIRE(scheduler.submit({prompt, greedy(), limits()}, results.listener(1, [&] { return second_gone.load(); })));
    second_gone = true;
    {
        std::unique_lock lock(results.mutex);
        REQUIRE(results.done_changed.wait_for(lock, std::chrono::minutes(1), [&] { return results.done[1].has_value(); }));
        CHECK_FALSE(results.done[0].has_value());  // the running one still holds the only sequence
    }
    CHECK(results.done[1]->finish == FinishReason::Cancelled);
    CHECK(results.done[1]->completion_tokens == 0);
    first_gone = true;
    results.wait();
    CHECK(results.done[0]->finish == FinishReason::Cancelled);
    CHECK(scheduler.metrics().queued == 0);
}

TEST_CASE("the scheduler refuses prompts it cannot run, before queuing them") {
    const fs::path stories = fs::path(VKLLM_SOURCE_DIR) / "models/stories260K.gguf";
    Engine batched({.model_path = stories.string(), .n_ctx = 16, .n_seq = 2});
    Scheduler scheduler(batched, {.max_queue = 1});
    RequestListener ignore{.on_text = [](std::string_view) { return true; }, .on_done = [](const Completion&) {}};
    CHECK_THROWS_WITH(scheduler.submit({{}, greedy(), limits()}, ignore), "the prompt is empty");
    CHECK_THROWS_WITH(scheduler.submit({std::vector<int32_t>(16, 1), greedy(), limits()}, ignore),
                      "the prompt's 16 tokens leave no room to generate in a context of 16 tokens");
    CHECK_THROWS_WITH(scheduler.submit({{1, 100000}, greedy(), limits()}, ignore),
                      "token id 100000 is outside the vocabulary of 512");
}

TEST_CASE("a reply ends where prompt and reply together fill the context, never past it") {
    const fs::path stories = fs::path(VKLLM_SOURCE_DIR) / "models/stories260K.gguf";
    Engine batched({.model_path = stories.string(), .n_ctx = 32, .n_seq = 2});
    const std::vector<int32_t> prompt = batched.tokenizer().tokenize("Once upon a time", true, false);
    Scheduler scheduler(batched);
    Results results(1);
    REQUIRE(scheduler.submit({prompt, greedy(), {.ignore_eos = true}}, results.listener(0)));
    results.wait();
    CHECK(results.done[0]->finish == FinishReason::Context);
    CHECK(results.done[0]->prompt_tokens + results.done[0]->completion_tokens == 32);
}

TEST_CASE("stopping ends running requests as interrupted, with their text so far, and queued ones as cancelled") {
    const fs::path stories = fs::path(VKLLM_SOURCE_DIR) / "models/stories260K.gguf";
    Engine batched({.model_path = stories.string(), .n_ctx = 256, .n_seq = 1});
    const std::vector<int32_t> prompt = batched.tokenizer().tokenize("Once upon a time", true, false);
    Scheduler scheduler(batched);
    Results results(2);
    std::mutex mutex;
    std::condition_variable first_text;
    bool texted = false;
    RequestListener running = results.listener(0);
    running.on_text = [&, inner = running.on_text](std::string_view piece) {
        {
            std::lock_guard lock(mutex);
            texted = true;
        }
        first_text.notify_all();
        return inner(piece);
    };
    REQUIRE(scheduler.submit({prompt, greedy(), {.ignore_eos = true}}, running));
    REQUIRE(scheduler.submit({prompt, greedy(), limits()}, results.listener(1)));  // waits: one sequence
    {
        std::unique_lock lock(mutex);
        REQUIRE(first_text.wait_for(lock, std::chrono::minutes(2), [&] { return texted; }));
    }
    scheduler.stop();
    REQUIRE(results.done[0]);
    CHECK(results.done[0]->finish == FinishReason::Interrupted);
    CHECK(results.done[0]->completion_tokens > 0);
    CHECK(results.done[0]->completion_tokens < 256);
    CHECK_FALSE(results.texts[0].empty());
    REQUIRE(results.done[1]);
    CHECK(results.done[1]->finish == FinishReason::Cancelled);
    CHECK(results.texts[1].empty());
    CHECK_THROWS_WITH(scheduler.submit({prompt, greedy(), limits()}, results.listener(1)), "the server is shutting down");
}

TEST_CASE("a prompt with an image runs in its own sequence beside text requests and gives what it gives alone") {
    const auto shared_dir = test::shared_path("fixtures/vision/gemma3_vis");
    if (!shared_dir) return;
    const fs::path& dir = *shared_dir;
    const EngineOptions options{.model_path = (dir / "model.gguf").string(), .n_ctx = 384,
                                .mmproj_path = (dir / "mmproj.gguf").string()};
    Engine single(options);
    EngineOptions batched_options = options;
    batched_options.n_seq = 3;
    Engine batched(batched_options);
    const std::vector<vision::Image> images{vision::load_image(dir / "chelsea.png")};
    const std::string prompt = "Once upon a time<__media__> there was a little cat.";

    // Alone: the prompt and its image through one session, then greedy generation.
    const vision::PromptRun run = run_prompt_with_images(single, prompt, images);
    const std::vector<float> first_logits = logits_to_continue(run, single.info().n_vocab);
    const uint32_t positions = single.session().n_past();
    sampling::Sampler sampler(greedy());
    for (int32_t id : run.text_tokens) sampler.accept(id);
    TextStream stream(single.tokenizer(), limits());
    std::string expected;
    generate(single.session(), sampler, stream, first_logits, [&](std::string_view piece) {
        expected += piece;
        return true;
    });

    Scheduler scheduler(batched, {.prefill_chunk = 8});
    const auto text_prompts = prompts_for({dir / "model.gguf", {}}, batched.tokenizer(), 2);
    Results results(3);
    const auto chunks = vision::tokenize_with_media(batched.tokenizer(), batched.encoder()->hparams().projector, prompt, 1);
    Request with_image{.sampling = greedy(), .limits = limits(), .chunks = chunks, .images = images};
    for (const vision::PromptChunk& chunk : chunks) with_image.prompt.insert(with_image.prompt.end(), chunk.tokens.begin(), chunk.tokens.end());
    REQUIRE(scheduler.submit({text_prompts[0], greedy(), limits()}, results.listener(0)));
    REQUIRE(scheduler.submit(std::move(with_image), results.listener(1)));
    REQUIRE(scheduler.submit({text_prompts[1], greedy(), limits()}, results.listener(2)));
    results.wait();
    CHECK(results.texts[1] == expected);
    CHECK(results.done[1]->error.empty());
    CHECK(results.done[1]->prompt_tokens == positions);
    CHECK(results.done[1]->prompt_tokens > run.text_tokens.size());  // the image's embeddings count
    for (size_t i : {0, 2}) CHECK(results.texts[i] == alone(single, text_prompts[i / 2]));
}

TEST_CASE("images without an encoder are refused") {
    const fs::path stories = fs::path(VKLLM_SOURCE_DIR) / "models/stories260K.gguf";
    Engine engine({.model_path = stories.string(), .n_ctx = 64});
    Scheduler scheduler(engine);
    RequestListener ignore{.on_text = [](std::string_view) { return true; }, .on_done = [](const Completion&) {}};
    Request request{.prompt = {1, 2}, .sampling = greedy(), .images = {vision::Image{1, 1, {0, 0, 0}}}};
    CHECK_THROWS_WITH(scheduler.submit(std::move(request), ignore),
                      "the prompt has images but the model has no image encoder (an mmproj)");
}

}  // namespace
}  // namespace vkllm::engine
