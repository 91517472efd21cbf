// vkllm chat -m MODEL [--system TEXT] [-n N] [sampling] [--mmproj MMPROJ --image FILE...]: an
// interactive conversation with the model's chat template (engine::Conversation: the KV cache of
// earlier turns is kept, the oldest turns are left out when the context fills, a turn too long for
// it is refused and the chat goes on). /exit, /clear and /help are not sent to the model.
#include <cstdio>
#include <iostream>
#include <unistd.h>


#include "core/error.h"
#include "engine/conversation.h"
#include "engine/generation.h"
#include "media.h"
#include "model_options.h"

namespace vkllm::cli {
namespace {

constexpr const char* commands_help =
    "One user turn per line. /clear starts over (the system prompt stays), /exit ends, /help shows this.\n";

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
    int32_t n_predict_option = 512;
    Options parser("chat", "-m MODEL [--system TEXT] [options]",
                   "A conversation through the model's chat template, one user turn per line of standard input; the KV "
                   "cache of earlier turns is kept.");
    parser.add("--system,-sys,--system-prompt", system, "TEXT", "the system prompt")
        .add("--chat-template-file", template_path, "FILE", "a Jinja chat template in place of the model's")
        .add("-n,--n-predict", n_predict_option, "N", "the most tokens of one reply; -1: until the context is full");
    options.declare(parser);
    sampling.declare(parser);
    media.declare(parser);
    if (!parser.parse(args)) return 0;
    options.check();
    media.check();
    const uint32_t n_predict = token_limit(n_predict_option);
    const sampling::SamplerParams sampler_params = sampling.resolve(options.verbose);

    const std::vector<vision::Image> images = media.active() ? load_images(media) : std::vector<vision::Image>();
    std::unique_ptr<engine::Engine> engine = open_engine(options, media.mmproj_path, template_path);
    if (engine->chat_template_is_fallback())
        std::fprintf(stderr, "vkllm chat: %s has no chat template; using ChatML\n", options.model_path.c_str());
    model::Session& session = engine->session();
    const tokenizer::Tokenizer& tokenizer = engine->tokenizer();
    sampling::Sampler sampler(sampler_params, sampler_params.grammar ? engine->token_table() : nullptr);
    const engine::GenerationLimits limits{.max_tokens = n_predict, .stops = engine->template_stops()};
    engine::Conversation conversation(*engine, system, images);

    const bool interactive = isatty(fileno(stdin));
    if (interactive) std::fprintf(stderr, "%s", commands_help);
    for (std::string line;;) {
        if (interactive) print("> ");
        if (!std::getline(std::cin, line)) break;
        if (line.empty()) continue;
        if (line == "/exit" || line == "/quit") break;
        if (line == "/clear") {
            conversation.clear();
            std::fprintf(stderr, "vkllm chat: the conversation is cleared\n");
            continue;
        }
        if (line == "/help") {
            std::fprintf(stderr, "%s", commands_help);
            continue;
        }
        const engine::TurnPrompt turn = conversation.add_user_turn(line, n_predict);
        if (!turn.accepted) {
            std::fprintf(stderr, "vkllm chat: that turn makes a prompt of %u tokens, and the context holds %u (raise -c); "
                                 "it was not sent\n", turn.n_positions, session.n_ctx());
            continue;
        }
        if (turn.dropped_turns)
            std::fprintf(stderr, "vkllm chat: left out the %u oldest turn%s to fit the context of %u tokens\n",
                         turn.dropped_turns, turn.dropped_turns == 1 ? "" : "s", session.n_ctx());
        for (tokenizer::TokenId id : session.history(0)) sampler.accept(id);
        sampler.restart_grammar();  // each reply is a whole match of the grammar
        std::string reply;
        engine::TextStream stream(tokenizer, limits);
        const engine::Generated generated = engine::generate(session, sampler, stream, turn.logits, [&](std::string_view text) {
            print(text);
            reply += text;
            return true;
        });
        print("\n");
        if (generated.finish == engine::FinishReason::Context)
            std::fprintf(stderr, "vkllm chat: the reply filled the context of %u tokens; the next turn leaves out the "
                                 "oldest\n", session.n_ctx());
        conversation.add_reply(reply);
    }
    write_reports(options, *engine);
    return 0;
}

}  // namespace vkllm::cli
