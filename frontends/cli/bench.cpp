// vkllm bench -m MODEL [-p 512] [-n 128] [-r REPS] [--json]: prompt processing and generation speed
// in the spirit of llama-bench, with what explains them: GPU time per op kind, dispatches and
// barriers per token, weight bytes read per token and the GB/s they make, host time per token.
// --kv-fill N times decode at a context of N tokens without prefilling it: a short prompt is
// evaluated, its cache cells are repeated on the GPU up to N (Session::fill_kv_repeating), and the
// -n tokens are generated from there. Attention and the indexer then read N cells of real
// activations, so their time is what it is at that context; the text is meaningless.
// --parallel B,... measures the server's batched decoding instead (bench_parallel.cpp).
// --grammar-file / --json-schema add two decode tests whose tokens are sampled from the logits (the
// run command's default sampling), once freely and once under the grammar (restarted after each
// end of generation), and time the sampler apart: the grammar's ms per token and its share of a
// decode step.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "gpu/pipeline.h"
#include "ops/tuning.h"
#include "bench_parallel.h"
#include "model_options.h"
#include "sampling/sampler.h"

namespace vkllm::cli {
namespace {

constexpr uint32_t kv_fill_prompt = 64;  // tokens evaluated before --kv-fill repeats their cells
constexpr uint32_t sampled_prompt = 8;   // tokens evaluated before the sampled decode tests

using Clock = std::chrono::steady_clock;

struct Spread {
    double median, min, max;
};

Spread spread(std::vector<double> values) {
    std::ranges::sort(values);
    return {values[values.size() / 2], values.front(), values.back()};
}

// The op a pass belongs to: its name without the "blk.N." layer prefix or a ".k" dispatch index.
std::string op_kind(std::string name) {
    if (name.starts_with("blk.")) name = name.substr(name.find('.', 4) + 1);
    if (auto dot = name.find('.'); dot != std::string::npos) name.resize(dot);
    return name;
}

struct SampledDecode {
    double tok_s = 0, sample_ms = 0;  // decode rate with sampling; the sampler's time per token
    sampling::Sampler::GrammarStats grammar;
};

// n_gen tokens decoded from a short prompt, each sampled from the logits before it.
SampledDecode sampled_decode(engine::Engine& engine, const std::vector<int32_t>& prompt, uint32_t n_gen,
                             const std::shared_ptr<const sampling::Grammar>& grammar) {
    model::Session& session = engine.session();
    sampling::SamplerParams params;
    params.seed = 1234;
    params.grammar = grammar;
    sampling::Sampler sampler(params, grammar ? engine.token_table() : nullptr);
    session.truncate(0);
    std::span<const float> logits = session.eval(prompt);
    double sample_seconds = 0;
    const auto started = Clock::now();
    for (uint32_t i = 0; i < n_gen; ++i) {
        const auto sampling_started = Clock::now();
        const int32_t token = sampler.sample(logits);
        sample_seconds += std::chrono::duration<double>(Clock::now() - sampling_started).count();
        if (grammar && engine.tokenizer().is_eog(token)) sampler.restart_grammar();
        logits = session.eval(std::span(&token, 1));
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
    return {n_gen / seconds, 1e3 * sample_seconds / n_gen, sampler.grammar_stats()};
}

}  // namespace

int bench(Args args) {
    ModelOptions options;
    GrammarOptions grammar_options;
    uint32_t n_prompt = 512, n_gen = 128, reps = 3, kv_fill = 0;
    std::string parallel;
    bool json = false;
    Options parser("bench", "-m MODEL [-p N] [-n N] [options]",
                   "Prompt and generation speed as llama-bench measures them, with GPU time per op (from profiled replays "
                   "of one prompt chunk and one decode step), dispatches, barriers and GB/s per token.");
    parser.add("-p,--n-prompt", n_prompt, "N", "prompt tokens to time; 0: no prompt test")
        .add("-n,--n-gen", n_gen, "N", "tokens to generate; 0: no generation test")
        .add("-r,--repetitions", reps, "N", "repetitions of each test")
        .add("--kv-fill", kv_fill, "N", "time decode at a context of N tokens (cells repeated from a short prompt)")
        .add("--parallel", parallel, "B,...", "time the server's batched decode instead: B requests at once, for each B")
        .flag("--json", json, "print the results as JSON")
        .add("-o,--output", [&json](std::string_view format) {
                 if (format != "json" && format != "md") fail("-o must be md or json (llama-bench's), not '{}'", format);
                 json = format == "json";
             }, "md|json", "llama-bench's spelling of --json", "md");
    options.declare(parser);
    grammar_options.declare(parser);
    if (!parser.parse(args)) return 0;
    options.check();
    if (n_prompt == 0 && n_gen == 0) fail("-p 0 -n 0 leaves nothing to time; give -p N for prompt speed, -n N for generation");
    if (reps == 0) fail("-r 0 runs nothing; give at least one repetition");
    if (kv_fill && (n_gen == 0 || !parallel.empty()))
        fail("--kv-fill {} times the generation test at that context; it needs -n N and no --parallel", kv_fill);
    const std::shared_ptr<const sampling::Grammar> grammar = grammar_options.resolve();
    if (grammar && n_gen == 0) fail("a grammar constrains generation, and -n 0 generates nothing");
    if (grammar && !parallel.empty()) fail("--parallel does not take a grammar; time it without --parallel");
    if (!parallel.empty()) return bench_parallel(options, parse_batch_sizes(parallel), n_prompt, n_gen, json);
    if (!options.n_ctx) options.n_ctx = std::max({n_prompt, kv_fill + n_gen + 1, grammar ? sampled_prompt + n_gen : 0});

    std::unique_ptr<engine::Engine> engine = open_engine(options);
    model::Session& session = engine->session();
    const uint32_t n_vocab = engine->info().n_vocab;
    // Token ids are drawn at random (fixed seed), as llama-bench does: speed does not depend on them.
    sampling::Rng rng(1234);
    auto random_tokens = [&](uint32_t count) {
        std::vector<int32_t> tokens(count);
        for (int32_t& token : tokens) token = int32_t(rng.next() % n_vocab);
        return tokens;
    };

    std::vector<double> pp_rates, tg_rates, host_ms;
    std::vector<SampledDecode> free_runs, grammar_runs;
    for (uint32_t rep = 0; rep < reps; ++rep) {
        if (grammar) {  // the same prompt for both, so that only the grammar differs
            const std::vector<int32_t> prompt = random_tokens(sampled_prompt);
            free_runs.push_back(sampled_decode(*engine, prompt, n_gen, nullptr));
            grammar_runs.push_back(sampled_decode(*engine, prompt, n_gen, grammar));
        }
        if (n_prompt) {
            session.truncate(0);
            auto tokens = random_tokens(n_prompt);
            // A first run's pipeline creation (compiling, or reading the cache) is not prompt speed.
            const double pipelines_before = engine->device().pipelines().creation_seconds();
            auto started = Clock::now();
            run_prompt(*engine, tokens);
            const double seconds = std::chrono::duration<double>(Clock::now() - started).count() -
                                   (engine->device().pipelines().creation_seconds() - pipelines_before);
            pp_rates.push_back(n_prompt / seconds);
        }
        if (n_gen) {
            session.truncate(0);
            if (kv_fill) {
                session.eval(random_tokens(std::min(kv_fill, kv_fill_prompt)));
                session.fill_kv_repeating(kv_fill);
            }
            const graph::GraphStats before = session.decode_stats();
            auto tokens = random_tokens(n_gen);
            auto started = Clock::now();
            for (int32_t token : tokens) session.eval(std::span(&token, 1));
            double wall_ms = std::chrono::duration<double, std::milli>(Clock::now() - started).count();
            const graph::GraphStats& after = session.decode_stats();
            tg_rates.push_back(n_gen / (wall_ms / 1e3));
            host_ms.push_back((wall_ms - (after.wait_ms - before.wait_ms)) / n_gen);
        }
    }

    // GPU time per kind of pass: one more replay of a prompt chunk's graph and of the decode step's.
    auto ms_by_op = [](const std::vector<graph::PassTime>& passes) {
        std::map<std::string, double> ms;
        for (const auto& pass : passes) ms[op_kind(pass.name)] += pass.milliseconds;
        return ms;
    };
    const uint32_t chunk = std::min(n_prompt, session.n_ubatch());
    const std::map<std::string, double> prompt_gpu_ms = chunk >= 2 ? ms_by_op(session.profile_prompt_chunk(chunk))
                                                                   : std::map<std::string, double>{};
    const graph::GraphStats& decode = session.decode_stats();
    const std::map<std::string, double> gpu_ms = n_gen ? ms_by_op(session.profile_decode()) : std::map<std::string, double>{};
    const gpu::Capabilities& caps = engine->device().caps();
    nlohmann::ordered_json out = {
        {"device", caps.name},
        {"driver", caps.driver_name + " " + caps.driver_info},
        {"model", engine->info().name},
        {"arch", engine->info().arch},
        {"weight_bytes", engine->info().weight_bytes},
        {"load_s", engine->load_seconds()},
        {"memory", {{"planned_bytes", engine->memory_plan().total()},
                    {"device_peak_bytes", engine->device().allocator().stats().peak_used_bytes},
                    {"resident_peak_bytes", peak_resident_bytes()}}},
        {"repetitions", reps},
    };
    if (kv_fill) out["kv_fill"] = kv_fill;
    out["tuned_shapes"] = ops::tuned_shapes_used();  // vkllm tune's launches the graphs took
    if (n_prompt) {
        Spread pp = spread(pp_rates);
        out["pp"] = {{"n", n_prompt}, {"tok_s", pp.median}, {"min", pp.min}, {"max", pp.max}};
        if (chunk >= 2) {
            out["pp"]["gpu_ms_by_op"] = prompt_gpu_ms;
            out["pp"]["gpu_ms_by_op_from"] = fmt::format("one prompt chunk of {} tokens replayed with a timestamp per pass", chunk);
        }
    }
    if (n_gen) {
        Spread tg = spread(tg_rates);
        out["tg"] = {{"n", n_gen}, {"tok_s", tg.median}, {"min", tg.min}, {"max", tg.max}};
        out["decode"] = {{"dispatches_per_token", decode.dispatches},
                         {"barriers_per_token", decode.barriers},
                         {"weight_bytes_per_token", decode.weight_bytes},
                         {"weight_gb_s", decode.weight_bytes * tg.median / 1e9},
                         {"host_ms_per_token", spread(host_ms).median},
                         {"gpu_ms_by_op", gpu_ms},
                         {"gpu_ms_by_op_from", "one decode step replayed with a timestamp per pass"}};
    }
    if (grammar) {
        const auto summary = [&](const std::vector<SampledDecode>& runs) {
            std::vector<double> rates, sample_ms;
            for (const SampledDecode& run : runs) {
                rates.push_back(run.tok_s);
                sample_ms.push_back(run.sample_ms);
            }
            const Spread rate = spread(rates);
            return nlohmann::ordered_json{{"n", n_gen}, {"tok_s", rate.median}, {"min", rate.min}, {"max", rate.max},
                                          {"sample_ms_per_token", spread(sample_ms).median}};
        };
        out["tg_sampled"] = summary(free_runs);
        out["tg_grammar"] = summary(grammar_runs);
        // The sampler is timed apart from the GPU, so its share does not drown in decode's noise.
        const double added_ms = out["tg_grammar"]["sample_ms_per_token"].get<double>() -
                                out["tg_sampled"]["sample_ms_per_token"].get<double>();
        out["tg_grammar"]["grammar_ms_per_token"] = added_ms;
        out["tg_grammar"]["grammar_share_of_decode"] = added_ms / (1e3 / out["tg_sampled"]["tok_s"].get<double>());
        const sampling::Sampler::GrammarStats& stats = grammar_runs.back().grammar;  // the last repetition's
        out["tg_grammar"]["tokens_by_lazy_check"] = stats.lazy;
        out["tg_grammar"]["tokens_by_cached_mask"] = stats.cached;
        out["tg_grammar"]["tokens_by_trie_walk"] = stats.masked;
    }
    if (json) {
        std::printf("%s\n", out.dump(2).c_str());
        return 0;
    }
    std::printf("device: %s (%s)\nmodel: %s, %.1f MiB of weights, loaded in %.2f s; memory: %.1f MiB planned, "
                "%.1f MiB resident at the peak\n", caps.name.c_str(), out["driver"].get<std::string>().c_str(),
                out["model"].get<std::string>().c_str(), engine->info().weight_bytes / 1048576.0, engine->load_seconds(),
                engine->memory_plan().total() / 1048576.0, peak_resident_bytes() / 1048576.0);
    if (kv_fill) std::printf("decode after --kv-fill %u: a context of %u tokens, cells repeated from a %u-token prompt\n",
                             kv_fill, kv_fill, std::min(kv_fill, kv_fill_prompt));
    if (out["tuned_shapes"].empty())
        std::printf("tuned shapes: none (the kernels' defaults; vkllm tune -m MODEL measures them)\n");
    for (const auto& shape : out["tuned_shapes"]) std::printf("tuned shape: %s\n", shape.get<std::string>().c_str());
    std::printf("\n");
    std::printf("| test | tokens | tok/s (median) | min | max |\n|---|---:|---:|---:|---:|\n");
    for (const char* test : {"pp", "tg", "tg_sampled", "tg_grammar"})
        if (out.contains(test))
            std::printf("| %s | %u | %.2f | %.2f | %.2f |\n", test, out[test]["n"].get<uint32_t>(), out[test]["tok_s"].get<double>(),
                        out[test]["min"].get<double>(), out[test]["max"].get<double>());
    if (grammar) {
        const auto& free = out["tg_sampled"];
        const auto& constrained = out["tg_grammar"];
        std::printf("\nsampling: %.3f ms per token freely, %.3f ms under the grammar (tokens decided by the lazy check "
                    "%llu, a cached mask %llu, a trie walk %llu): the grammar adds %.3f ms per token, %.2f%% of a "
                    "%.1f ms decode step\n",
                    free["sample_ms_per_token"].get<double>(), constrained["sample_ms_per_token"].get<double>(),
                    (unsigned long long)constrained["tokens_by_lazy_check"].get<uint64_t>(),
                    (unsigned long long)constrained["tokens_by_cached_mask"].get<uint64_t>(),
                    (unsigned long long)constrained["tokens_by_trie_walk"].get<uint64_t>(),
                    constrained["grammar_ms_per_token"].get<double>(),
                    100.0 * constrained["grammar_share_of_decode"].get<double>(), 1e3 / free["tok_s"].get<double>());
    }
    if (n_gen) {
        const auto& d = out["decode"];
        std::printf("\ndecode: %zu dispatches and %zu barriers per token; %.2f MiB of weights per token = %.3f GB/s; "
                    "host %.3f ms per token outside the GPU wait\n",
                    decode.dispatches, decode.barriers, decode.weight_bytes / 1048576.0, d["weight_gb_s"].get<double>(),
                    d["host_ms_per_token"].get<double>());
        std::printf("\n| op (decode, one token; GPU time from a profiled replay with a timestamp per pass) | GPU ms |\n"
                    "|---|---:|\n");
        for (const auto& [kind, ms] : gpu_ms) std::printf("| %s | %.3f |\n", kind.c_str(), ms);
    }
    if (!prompt_gpu_ms.empty()) {
        std::printf("\n| op (prompt, one chunk of %u tokens; GPU time from a profiled replay with a timestamp per pass) "
                    "| GPU ms |\n|---|---:|\n", chunk);
        for (const auto& [kind, ms] : prompt_gpu_ms) std::printf("| %s | %.3f |\n", kind.c_str(), ms);
    }
    return 0;
}

}  // namespace vkllm::cli
