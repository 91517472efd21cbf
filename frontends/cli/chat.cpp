// vkllm chat -m MODEL [--system TEXT] [-n N] [sampling]: an interactive conversation with the model's
// chat template. Each turn renders the whole conversation, keeps the KV cache of the prefix the
// previous turn already computed, and runs only the new tokens.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "chat/prompt.h"
#include "core/error.h"
#include "model_options.h"

namespace vkllm::cli {
namespace {

constexpr const char* chat_usage =
    "usage: vkllm chat {} [--system TEXT] [--chat-template-file F] [-n N] {}  (one user turn per line of input)";

void print(const std::string& text) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
}

// Samples until an end-of-generation token or the limit; returns the reply's text.
std::string reply(LoadedModel& loaded, sampling::Sampler& sampler, std::span<const float> logits, uint32_t limit,
                  std::vector<tokenizer::TokenId>& history) {
    tokenizer::StreamDecoder decoder(loaded.tokenizer);
    std::string text;
    for (uint32_t generated = 0; generated < limit && loaded.session->n_past() < loaded.session->n_ctx(); ++generated) {
        tokenizer::TokenId next = sampler.sample(logits);
        if (loaded.tokenizer.is_eog(next)) break;
        std::string piece = decoder.push(next);
        print(piece);
        text += piece;
        history.push_back(next);
        logits = loaded.session->eval(std::span(&next, 1));
    }
    std::string tail = decoder.finish();
    print(tail + "\n");
    return text + tail;
}

}  // namespace

int chat(Args args) {
    ModelOptions options;
    SamplingOptions sampling;
    std::string system, template_path;
    uint32_t n_predict = 512;
    for (size_t i = 0; i < args.size(); ++i) {
        if (options.parse(args, i) || sampling.parse(args, i)) continue;
        if (args[i] == "--system" && i + 1 < args.size()) system = args[++i];
        else if (args[i] == "--chat-template-file" && i + 1 < args.size()) template_path = args[++i];
        else if (args[i] == "-n" && i + 1 < args.size()) n_predict = parse_count("-n", args[++i]);
        else fail("unexpected argument '{}'; {}", args[i], fmt::format(chat_usage, ModelOptions::usage, SamplingOptions::usage));
    }
    if (options.model_path.empty()) fail(chat_usage, ModelOptions::usage, SamplingOptions::usage);

    LoadedModel loaded(options);
    tokenizer::Vocab vocab = loaded.tokenizer.vocab();
    if (!template_path.empty()) {
        std::ifstream in(template_path);
        if (!in) fail("cannot open {}", template_path);
        std::stringstream text;
        text << in.rdbuf();
        vocab.chat_template = text.str();
    }
    const chat::ChatTemplate chat_template(vocab, template_path.empty() ? options.model_path : template_path);
    sampling::Sampler sampler(sampling.params);

    nlohmann::ordered_json messages = nlohmann::ordered_json::array();
    if (!system.empty()) messages.push_back({{"role", "system"}, {"content", system}});
    std::vector<tokenizer::TokenId> history;  // what the KV cache holds, in order
    const bool interactive = isatty(fileno(stdin));
    for (std::string line;;) {
        if (interactive) print("> ");
        if (!std::getline(std::cin, line)) break;
        if (line.empty()) continue;
        messages.push_back({{"role", "user"}, {"content", line}});
        std::vector<tokenizer::TokenId> prompt = chat::prompt_tokens(loaded.tokenizer, chat_template.render(messages, true));
        // Keep the cache of the longest prefix this turn shares with what was computed before.
        size_t shared = 0;
        while (shared < history.size() && shared < prompt.size() && history[shared] == prompt[shared]) ++shared;
        if (shared == prompt.size()) --shared;  // the last prompt token must run to give logits
        loaded.session->truncate(uint32_t(shared));
        history.assign(prompt.begin(), prompt.end());
        std::span<const float> logits = loaded.session->eval(std::span(prompt).subspan(shared));
        for (tokenizer::TokenId id : prompt) sampler.accept(id);
        messages.push_back({{"role", "assistant"}, {"content", reply(loaded, sampler, logits, n_predict, history)}});
    }
    write_reports(options, loaded);
    return 0;
}

}  // namespace vkllm::cli
