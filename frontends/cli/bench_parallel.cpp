// vkllm bench -m MODEL --parallel 1,2,4,8 [-p N] [-n N] [--json]: the server's scheduler under B
// simultaneous requests, for each B: aggregate decode tok/s (every sequence's tokens per second of
// batched decode steps), the time of one step, time to first token (mean and worst: B prompts of -p
// tokens prefilled in chunks between decode steps) and prompt tok/s. Greedy, end-of-generation
// ignored, so every request generates exactly -n tokens.
#include "bench_parallel.h"

#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "engine/scheduler.h"

namespace vkllm::cli {
namespace {

using Clock = std::chrono::steady_clock;

struct Measure {
    uint32_t batch;
    double decode_tok_s, step_ms, ttft_mean_ms, ttft_max_ms, prompt_tok_s;
};

}  // namespace

std::vector<uint32_t> parse_batch_sizes(std::string_view text) {
    std::vector<uint32_t> batches;
    std::stringstream in{std::string(text)};
    for (std::string item; std::getline(in, item, ',');) {
        uint32_t b = 0;
        const auto [end, error] = std::from_chars(item.data(), item.data() + item.size(), b);
        if (error != std::errc() || end != item.data() + item.size())
            fail("--parallel takes batch sizes separated by commas, as in 1,2,4,8, not '{}'", text);
        if (b == 0 || b > 64) fail("--parallel takes batch sizes from 1 to 64, not {}", b);
        batches.push_back(b);
    }
    if (batches.empty()) fail("--parallel needs at least one batch size, as in --parallel 1,2,4,8");
    return batches;
}

namespace {

// B requests submitted at once; returns when all are done.
Measure run_batch(engine::Engine& engine, uint32_t batch, uint32_t n_prompt, uint32_t n_gen) {
    engine::Scheduler scheduler(engine);
    std::mutex mutex;
    std::condition_variable changed;
    uint32_t finished = 0;
    std::string error;  // the first request's failure, raised on this thread
    std::vector<double> first_token_ms(batch, -1);
    const auto start = Clock::now();
    for (uint32_t i = 0; i < batch; ++i) {
        // Distinct prompts, so no sequence reuses another's cells.
        std::vector<int32_t> prompt(n_prompt);
        for (uint32_t t = 0; t < n_prompt; ++t) prompt[t] = int32_t(1 + (i * 7919 + t * 104729) % (engine.info().n_vocab - 1));
        engine::RequestListener listener{
            .on_text = [&, i](std::string_view) {
                std::lock_guard lock(mutex);
                if (first_token_ms[i] < 0)
                    first_token_ms[i] = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
                return true;
            },
            .on_done = [&](const engine::Completion& completion) {
                std::lock_guard lock(mutex);
                if (error.empty()) error = completion.error;
                ++finished;
                changed.notify_all();
            }};
        scheduler.submit({std::move(prompt), {.temperature = 0}, {.max_tokens = n_gen, .ignore_eos = true}}, std::move(listener));
    }
    std::unique_lock lock(mutex);
    changed.wait(lock, [&] { return finished == batch; });
    if (!error.empty()) fail("a request failed: {}", error);
    const engine::SchedulerMetrics m = scheduler.metrics();
    double ttft_sum = 0, ttft_max = 0;
    for (double ms : first_token_ms) ttft_sum += ms, ttft_max = std::max(ttft_max, ms);
    // The first token of each request comes from its prefill; decode steps make the rest.
    const double decoded = double(m.generated_tokens) - batch;
    return {batch, decoded / m.decode_seconds, 1000.0 * m.decode_seconds / double(m.decode_steps), ttft_sum / batch,
            ttft_max, double(m.prompt_tokens) / m.prompt_seconds};
}

}  // namespace

int bench_parallel(ModelOptions options, const std::vector<uint32_t>& batches, uint32_t n_prompt, uint32_t n_gen,
                   bool json) {
    if (n_prompt == 0 || n_gen < 2) fail("bench --parallel needs -p of at least 1 and -n of at least 2 tokens");
    if (!options.n_ctx) options.n_ctx = n_prompt + n_gen;
    const uint32_t most = *std::ranges::max_element(batches);
    std::unique_ptr<engine::Engine> engine = open_engine(options, {}, {}, most);
    run_batch(*engine, 1, std::min(n_prompt, 8u), 2);  // compiles every pipeline before the clock runs

    std::vector<Measure> measures;
    for (uint32_t batch : batches) measures.push_back(run_batch(*engine, batch, n_prompt, n_gen));
    const double single = measures.front().batch == 1 ? measures.front().decode_tok_s : 0;
    if (json) {
        nlohmann::ordered_json out = {{"model", engine->info().name}, {"device", engine->device().caps().name},
                                      {"n_prompt", n_prompt}, {"n_gen", n_gen}, {"runs", nlohmann::ordered_json::array()}};
        for (const Measure& m : measures)
            out["runs"].push_back({{"parallel", m.batch}, {"decode_tok_s", m.decode_tok_s}, {"step_ms", m.step_ms},
                                   {"ttft_mean_ms", m.ttft_mean_ms}, {"ttft_max_ms", m.ttft_max_ms},
                                   {"prompt_tok_s", m.prompt_tok_s}});
        std::printf("%s\n", out.dump(2).c_str());
        return 0;
    }
    std::printf("%s on %s: %u-token prompts, %u tokens generated per request\n", engine->info().name.c_str(),
                engine->device().caps().name.c_str(), n_prompt, n_gen);
    std::printf("| parallel | decode tok/s (all) | vs 1 | step ms | TTFT mean ms | TTFT max ms | prompt tok/s |\n"
                "|---:|---:|---:|---:|---:|---:|---:|\n");
    for (const Measure& m : measures)
        std::printf("| %u | %.2f | %s | %.1f | %.0f | %.0f | %.1f |\n", m.batch, m.decode_tok_s,
                    single > 0 ? fmt::format("{:.2f}x", m.decode_tok_s / single).c_str() : "-", m.step_ms, m.ttft_mean_ms,
                    m.ttft_max_ms, m.prompt_tok_s);
    return 0;
}

}  // namespace vkllm::cli
