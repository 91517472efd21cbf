// vkllm chat -m MODEL [--system TEXT] [-n N] [sampling] [--mmproj MMPROJ --image FILE...]: an
// interactive conversation with the model's chat template. Each turn renders the whole conversation,
// keeps the KV cache of the prefix the previous turn already computed, and runs only the new tokens.
// Images go with the first user turn; a conversation with images runs whole each turn (the encoder
// keeps each image's embeddings, so only the text is computed again).
#include <cstdio>
#include <iostream>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "chat/prompt.h"
#include "core/error.h"
#include "engine/generation.h"
#include "engine/media.h"
#include "media.h"
#include "model_options.h"

namespace vkllm::cli {
namespace {

void print(std::string_view text) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
}

}  // namespace

int chat(Args args) {
    ModelOptions options;
    SamplingOptions sampling;
    MediaOptions media;
    std::string system, template_path;
    uint32_t n_predict = 512;
    Options parser("chat", "-m MODEL [--system TEXT] [options]",
                   "A conversation through the model's chat template, one user turn per line of standard input; the KV "
                   "cache of earlier turns is kept.");
    parser.add("--system", system, "TEXT", "the system prompt")
        .add("--chat-template-file", template_path, "FILE", "a Jinja chat template in place of the model's")
        .add("-n,--n-predict", n_predict, "N", "the most tokens of one reply");
    options.declare(parser);
    sampling.declare(parser);
    media.declare(parser);
    if (!parser.parse(args)) return 0;
    options.check();
    media.check();
    const sampling::SamplerParams sampler_params = sampling.resolve(options.verbose);

    const std::vector<vision::Image> images = media.active() ? load_images(media) : std::vector<vision::Image>();
    std::unique_ptr<engine::Engine> engine = open_engine(options, media.mmproj_path, template_path);
    model::Session& session = engine->session();
    const tokenizer::Tokenizer& tokenizer = engine->tokenizer();
    sampling::Sampler sampler(sampler_params);
    const engine::GenerationLimits limits{.max_tokens = n_predict, .stops = engine->template_stops()};

    nlohmann::ordered_json messages = nlohmann::ordered_json::array();
    if (!system.empty()) messages.push_back({{"role", "system"}, {"content", system}});
    std::vector<tokenizer::TokenId> history;  // what the KV cache holds, in order
    const bool interactive = isatty(fileno(stdin));
    for (std::string line;;) {
        if (interactive) print("> ");
        if (!std::getline(std::cin, line)) break;
        if (line.empty()) continue;
        const bool first_turn = history.empty();
        if (!images.empty() && first_turn && line.find(vision::media_marker) == std::string::npos)
            for (size_t i = 0; i < images.size(); ++i) line.insert(0, vision::media_marker);
        messages.push_back({{"role", "user"}, {"content", line}});
        const std::string rendered = engine->chat_template().render(messages, true);
        std::span<const float> logits;
        std::vector<float> media_logits;
        if (!images.empty()) {
            session.truncate(0);
            vision::PromptRun run =
                engine::run_prompt_with_images(*engine, chat::without_template_bos(tokenizer, rendered), images);
            media_logits = engine::logits_to_continue(run, engine->info().n_vocab);
            logits = media_logits;
            history = run.text_tokens;
        } else {
            std::vector<tokenizer::TokenId> prompt = chat::prompt_tokens(tokenizer, rendered);
            // Keep the cache of the longest prefix this turn shares with what was computed before.
            size_t shared = 0;
            while (shared < history.size() && shared < prompt.size() && history[shared] == prompt[shared]) ++shared;
            if (shared == prompt.size()) --shared;  // the last prompt token must run to give logits
            session.truncate(uint32_t(shared));
            history.assign(prompt.begin(), prompt.end());
            logits = session.eval(std::span(prompt).subspan(shared));
        }
        for (tokenizer::TokenId id : history) sampler.accept(id);
        std::string reply;
        engine::TextStream stream(tokenizer, limits);
        const engine::Generated generated = engine::generate(session, sampler, stream, logits, [&](std::string_view text) {
            print(text);
            reply += text;
            return true;
        });
        print("\n");
        // The cache holds the reply's tokens up to the last one that ran.
        history.insert(history.end(), generated.tokens.begin(), generated.tokens.end());
        history.resize(std::min<size_t>(history.size(), session.n_past()));
        messages.push_back({{"role", "assistant"}, {"content", reply}});
    }
    write_reports(options, *engine);
    return 0;
}

}  // namespace vkllm::cli
