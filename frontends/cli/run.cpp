// vkllm run -m MODEL -p PROMPT [-n N] [sampling] : generates text, streamed as it comes, then prints
// prompt and generation speed.
#include <chrono>
#include <cstdio>

#include "core/error.h"
#include "core/file.h"
#include "engine/generation.h"
#include "engine/media.h"
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
    int32_t n_predict_option = 128;
    bool ignore_eos = false, no_display_prompt = false;
    Options parser("run", "-m MODEL (-p PROMPT | -f FILE) [-n N] [options]",
                   "Generates text from a prompt, streamed as it comes, then prints the prompt and generation speed.");
    parser.add("-p,--prompt", prompt, "TEXT", "the prompt")
        .add("-f,--file", prompt_path, "FILE", "read the prompt from a file")
        .add("-n,--n-predict", n_predict_option, "N", "tokens to generate; -1: until the context is full")
        .flag("--ignore-eos", ignore_eos, "go on past the end-of-generation token")
        .flag("--no-display-prompt", no_display_prompt, "print only the generated text, not the prompt before it");
    options.declare(parser);
    sampling.declare(parser);
    media.declare(parser);
    if (!parser.parse(args)) return 0;
    options.check();
    media.check();
    if (!prompt.empty() && !prompt_path.empty()) fail("give the prompt once: with -p TEXT or with -f FILE");
    if (!prompt_path.empty()) prompt = read_text_file(prompt_path, "prompt file");
    if (n_predict_option < -1) fail("-n must be -1 (until the context is full) or at least 0, not {}", n_predict_option);
    const uint32_t n_predict = n_predict_option == -1 ? UINT32_MAX : uint32_t(n_predict_option);
    const sampling::SamplerParams sampler_params = sampling.resolve(options.verbose);

    const std::vector<vision::Image> images = media.active() ? load_images(media) : std::vector<vision::Image>();
    std::unique_ptr<engine::Engine> engine = open_engine(options, media.mmproj_path);
    const tokenizer::Tokenizer& tok = engine->tokenizer();
    model::Session& session = engine->session();
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
    }
    if (tokens.empty()) fail("the prompt is empty and the vocabulary adds no BOS token; give a prompt with -p");
    if (std::max<size_t>(tokens.size(), session.n_past()) + n_predict > session.n_ctx())
        fail("the prompt ({} tokens) and {} tokens to generate exceed the context of {} tokens (raise it with -c)",
             std::max<size_t>(tokens.size(), session.n_past()), n_predict, session.n_ctx());

    sampling::Sampler sampler(sampler_params);
    for (tokenizer::TokenId id : tokens) sampler.accept(id);
    if (!no_display_prompt) print(prompt);

    std::span<const float> logits = media.active() ? std::span<const float>(media_logits) : session.eval(tokens);
    double prompt_seconds = seconds_since(started);

    // SPM vocabularies drop the leading space of the first piece of a text (llama.cpp detokenize).
    engine::TextStream stream(tok, {.max_tokens = n_predict, .ignore_eos = ignore_eos},
                              tok.vocab().add_space_prefix && (prompt.empty() || no_display_prompt));
    started = Clock::now();
    const engine::Generated generated = n_predict == 0 ? engine::Generated{} :
        engine::generate(session, sampler, stream, logits, [](std::string_view text) {
            print(text);
            return true;
        });
    print("\n");
    double generation_seconds = seconds_since(started);
    const size_t n_generated = generated.tokens.size();
    std::fprintf(stderr, "prompt: %zu tokens in %.3f s (%.1f tok/s); generation: %zu tokens in %.3f s (%.1f tok/s)\n",
                 tokens.size(), prompt_seconds, tokens.size() / prompt_seconds, n_generated, generation_seconds,
                 n_generated ? n_generated / generation_seconds : 0.0);
    write_reports(options, *engine);
    return 0;
}

}  // namespace vkllm::cli
