// vkllm run -m MODEL -p PROMPT [-n N] [sampling] : generates text, streamed as it comes, until -n
// tokens, the end of generation or a full context (or shifts it with --context-shift), then prints
// load, prompt and generation times.
#include <chrono>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/file.h"
#include "engine/generation.h"
#include "engine/media.h"
#include "gpu/pipeline.h"
#include "media.h"
#include "model_options.h"

namespace vkllm::cli {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

void print(std::string_view text) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
}

}  // namespace

int run(Args args) {
    ModelOptions options;
    SamplingOptions sampling;
    MediaOptions media;
    std::string prompt, prompt_path;
    int32_t n_predict_option = 128, n_logprobs = -1;
    bool ignore_eos = false, no_display_prompt = false, context_shift = false, json = false;
    uint32_t n_keep = 0;
    Options parser("run", "-m MODEL (-p PROMPT | -f FILE) [-n N] [options]",
                   "Generates text from a prompt, streamed as it comes, then prints the prompt and generation speed.");
    parser.add("-p,--prompt", prompt, "TEXT", "the prompt")
        .add("-f,--file", prompt_path, "FILE", "read the prompt from a file")
        .add("-n,--n-predict", n_predict_option, "N", "tokens to generate; -1: until the context is full")
        .flag("--ignore-eos", ignore_eos, "go on past the end-of-generation token")
        .flag("--no-display-prompt", no_display_prompt, "print only the generated text, not the prompt before it")
        .flag("--context-shift", context_shift, "when the context is full, drop the oldest half of it (after --keep) "
                                                "and go on, as llama.cpp does; without it generation stops there")
        .add("--keep", n_keep, "N", "prompt tokens (after BOS) that --context-shift keeps")
        .flag("--json", json, "print one JSON object at the end (text, tokens, finish reason, timings) instead of "
                              "streaming")
        .add("--logprobs", n_logprobs, "N", "with --json: each generated token's log-probability under the model and its N "
                                            "most likely alternatives (0-20); -1: none");
    options.declare(parser);
    sampling.declare(parser);
    media.declare(parser);
    if (!parser.parse(args)) return 0;
    options.check();
    media.check();
    if (!prompt.empty() && !prompt_path.empty()) fail("give the prompt once: with -p TEXT or with -f FILE");
    if (!prompt_path.empty()) prompt = read_text_file(prompt_path, "prompt file");
    const uint32_t n_predict = token_limit(n_predict_option);
    sampling::SamplerParams sampler_params = sampling.resolve(options.verbose);
    sampler_params.top_logprobs = n_logprobs;
    sampling::validate(sampler_params, {.top_logprobs = "--logprobs"});
    if (n_logprobs >= 0 && !json) fail("--logprobs needs --json, which prints them");
    if (sampler_params.grammar && ignore_eos) fail("--ignore-eos cannot go with a grammar: the grammar decides where the text ends");

    const std::vector<vision::Image> images = media.active() ? load_images(media) : std::vector<vision::Image>();
    std::unique_ptr<engine::Engine> engine = open_engine(options, media.mmproj_path);
    const tokenizer::Tokenizer& tok = engine->tokenizer();
    model::Session& session = engine->session();
    const gpu::PipelineCache& pipelines = engine->device().pipelines();
    const double pipeline_seconds_at_load = pipelines.creation_seconds();

    // With images the prompt's length is known once they are encoded: the session checks the context.
    std::vector<float> media_logits;
    auto started = Clock::now();
    std::vector<tokenizer::TokenId> tokens;
    if (media.active()) {
        vision::PromptRun run = engine::run_prompt_with_images(*engine, prompt, images);
        media_logits = engine::logits_to_continue(run, engine->info().n_vocab);
        tokens = std::move(run.text_tokens);
    } else {
        tokens = tok.tokenize(prompt, /*add_special=*/true, /*parse_special=*/true);
        if (tokens.size() > session.n_ctx())
            fail("the prompt is {} tokens and the context holds {} (-c {}); raise -c", tokens.size(), session.n_ctx(),
                 session.n_ctx());
    }
    if (tokens.empty()) fail("the prompt is empty and the vocabulary adds no BOS token; give a prompt with -p");

    sampling::Sampler sampler(sampler_params, sampler_params.grammar ? engine->token_table() : nullptr);
    for (tokenizer::TokenId id : tokens) sampler.accept(id);
    if (!no_display_prompt && !json) print(prompt);

    std::span<const float> logits = media.active() ? std::span<const float>(media_logits) : run_prompt(*engine, tokens);
    // Image positions count as prompt tokens; pipelines first created for the prompt are timed apart.
    const uint32_t n_prompt = session.n_past();
    const double pipeline_seconds = pipelines.creation_seconds() - pipeline_seconds_at_load;
    const double prompt_seconds = seconds_since(started) - pipeline_seconds;

    // SPM vocabularies drop the leading space of the first piece of a text (llama.cpp detokenize).
    engine::TextStream stream(tok, {.max_tokens = n_predict, .ignore_eos = ignore_eos},
                              tok.vocab().add_space_prefix && (prompt.empty() || no_display_prompt));
    std::string text;
    started = Clock::now();
    const engine::Generated generated = n_predict == 0 ? engine::Generated{} :
        engine::generate(session, sampler, stream, logits, [&](std::string_view piece) {
            if (json) text += piece;
            else print(piece);
            return true;
        }, {.enabled = context_shift, .n_keep = std::min(n_keep + (tok.vocab().add_bos ? 1u : 0u), n_prompt)});
    const double generation_seconds = seconds_since(started);
    const size_t n_generated = generated.tokens.size();
    // From opening the file to the first token's logits (sampling it takes microseconds).
    const double first_token_seconds = engine->load_seconds() + pipeline_seconds + prompt_seconds;
    const double prompt_rate = n_prompt / prompt_seconds, generation_rate = n_generated ? n_generated / generation_seconds : 0.0;
    if (json) {
        nlohmann::ordered_json out = {
            {"text", text},
            {"tokens", generated.tokens},
            {"finish_reason", engine::finish_reason_name(generated.finish)},
            {"context_shifts", generated.context_shifts},
            {"seed", sampler_params.seed},
            {"prompt_tokens", n_prompt},
            {"generated_tokens", n_generated},
            {"timings", {{"load_s", engine->load_seconds()}, {"first_token_s", first_token_seconds},
                         {"prompt_pipelines_s", pipeline_seconds},
                         {"prompt_s", prompt_seconds}, {"prompt_tok_s", prompt_rate},
                         {"generation_s", generation_seconds}, {"generation_tok_s", generation_rate}}},
        };
        if (n_logprobs >= 0) {
            const auto entry = [&](const sampling::TokenLogprob& lp) {
                return nlohmann::ordered_json{{"token", lp.id}, {"text", tok.token_to_piece(lp.id, true)}, {"logprob", lp.logprob}};
            };
            nlohmann::ordered_json& logprobs = out["logprobs"] = nlohmann::ordered_json::array();
            for (const sampling::TokenLogprobs& token : generated.logprobs) {
                nlohmann::ordered_json& item = logprobs.emplace_back(entry(token.sampled));
                item["top"] = nlohmann::ordered_json::array();
                for (const sampling::TokenLogprob& alternative : token.top) item["top"].push_back(entry(alternative));
            }
        }
        // The text stream is well-formed UTF-8 (engine::TextStream); a token's piece may be part of a character.
        std::printf("%s\n", out.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace).c_str());
    } else {
        print("\n");
    }
    if (generated.finish == engine::FinishReason::Context)
        std::fprintf(stderr, "vkllm run: stopped: the context of %u tokens is full (raise -c, or --context-shift to go on)\n",
                     session.n_ctx());
    if (generated.context_shifts)
        std::fprintf(stderr, "vkllm run: the context was shifted %u times (the first %u tokens kept, half of the rest "
                             "dropped each time)\n", generated.context_shifts, std::min(n_keep, n_prompt));
    std::fprintf(stderr, "load: %.2f s (file, weights, decode graph; the first token after %.2f s); prompt: %u tokens "
                         "in %.3f s (%.1f tok/s)%s; generation: %zu tokens in %.3f s (%.1f tok/s)\n",
                 engine->load_seconds(), first_token_seconds, n_prompt, prompt_seconds, prompt_rate,
                 pipeline_seconds > 0.0005 ? fmt::format(" after {:.3f} s creating its pipelines", pipeline_seconds).c_str() : "",
                 n_generated, generation_seconds, generation_rate);
    write_reports(options, *engine);
    return 0;
}

}  // namespace vkllm::cli
