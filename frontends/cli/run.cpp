// vkllm run -m MODEL -p PROMPT [-n N] [sampling] : generates text, streamed as it comes, then prints
// prompt and generation speed.
#include <chrono>
#include <cstdio>

#include "core/error.h"
#include "media.h"
#include "model_options.h"

namespace vkllm::cli {
namespace {

constexpr const char* run_usage = "usage: vkllm run {} -p PROMPT [-n N] {} [--mmproj MMPROJ --image FILE...]";

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

void print(const std::string& text) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
}

}  // namespace

int run(Args args) {
    ModelOptions options;
    SamplingOptions sampling;
    MediaOptions media;
    std::string prompt;
    uint32_t n_predict = 128;
    for (size_t i = 0; i < args.size(); ++i) {
        if (options.parse(args, i) || sampling.parse(args, i) || media.parse(args, i)) continue;
        if ((args[i] == "-p" || args[i] == "--prompt") && i + 1 < args.size()) prompt = args[++i];
        else if (args[i] == "-n" && i + 1 < args.size()) n_predict = parse_count("-n", args[++i]);
        else fail("unexpected argument '{}'; {}", args[i], fmt::format(run_usage, ModelOptions::usage, SamplingOptions::usage));
    }
    if (options.model_path.empty()) fail(run_usage, ModelOptions::usage, SamplingOptions::usage);

    LoadedModel loaded(options);
    const tokenizer::Tokenizer& tok = loaded.tokenizer;
    model::Session& session = *loaded.session;
    // With images the prompt's length is known once they are encoded: the session checks the context.
    std::vector<float> media_logits;
    auto started = Clock::now();
    std::vector<tokenizer::TokenId> tokens = media.active() ? prefill_with_media(loaded, media, prompt, media_logits)
                                                            : tok.tokenize(prompt, /*add_special=*/true, /*parse_special=*/true);
    if (tokens.empty()) fail("the prompt is empty and the vocabulary adds no BOS token; give a prompt with -p");
    if (std::max<size_t>(tokens.size(), session.n_past()) + n_predict > session.n_ctx())
        fail("the prompt ({} tokens) and {} tokens to generate exceed the context of {} tokens (raise it with -c)",
             std::max<size_t>(tokens.size(), session.n_past()), n_predict, session.n_ctx());

    sampling::Sampler sampler(sampling.params);
    for (tokenizer::TokenId id : tokens) sampler.accept(id);
    print(prompt);

    std::span<const float> logits = media.active() ? std::span<const float>(media_logits) : session.eval(tokens);
    double prompt_seconds = seconds_since(started);

    // SPM vocabularies drop the leading space of the first piece of a text (llama.cpp detokenize).
    bool strip_space = tok.vocab().add_space_prefix && prompt.empty();
    tokenizer::StreamDecoder decoder(tok);
    uint32_t generated = 0;
    started = Clock::now();
    while (generated < n_predict) {
        tokenizer::TokenId next = sampler.sample(logits);
        if (tok.is_eog(next)) break;
        ++generated;
        std::string text = decoder.push(next);
        if (strip_space && !text.empty()) {
            if (text.front() == ' ') text.erase(0, 1);
            strip_space = false;
        }
        print(text);
        if (generated == n_predict) break;
        logits = session.eval(std::span(&next, 1));
    }
    print(decoder.finish() + "\n");
    double generation_seconds = seconds_since(started);
    std::fprintf(stderr, "prompt: %zu tokens in %.3f s (%.1f tok/s); generation: %u tokens in %.3f s (%.1f tok/s)\n",
                 tokens.size(), prompt_seconds, tokens.size() / prompt_seconds, generated, generation_seconds,
                 generated ? generated / generation_seconds : 0.0);
    write_reports(options, loaded);
    return 0;
}

}  // namespace vkllm::cli
