// vkllm chat -m MODEL [--system TEXT] [-n N] [sampling] [--mmproj MMPROJ --image FILE...]: an
// interactive conversation with the model's chat template. Each turn renders the whole conversation,
// keeps the KV cache of the prefix the previous turn already computed, and runs only the new tokens.
// Images go with the first user turn; a conversation with images runs whole each turn (the encoder
// keeps each image's embeddings, so only the text is computed again).
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "chat/prompt.h"
#include "core/error.h"
#include "media.h"
#include "model_options.h"

namespace vkllm::cli {
namespace {

constexpr const char* chat_usage =
    "usage: vkllm chat {} [--system TEXT] [--chat-template-file F] [-n N] {} [--mmproj MMPROJ --image FILE...]  (one "
    "user turn per line of input)";

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
    MediaOptions media;
    std::string system, template_path;
    uint32_t n_predict = 512;
    for (size_t i = 0; i < args.size(); ++i) {
        if (options.parse(args, i) || sampling.parse(args, i) || media.parse(args, i)) continue;
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
    std::optional<LoadedMedia> images;
    if (media.active()) images.emplace(loaded, media);

    nlohmann::ordered_json messages = nlohmann::ordered_json::array();
    if (!system.empty()) messages.push_back({{"role", "system"}, {"content", system}});
    std::vector<tokenizer::TokenId> history;  // what the KV cache holds, in order
    const bool interactive = isatty(fileno(stdin));
    for (std::string line;;) {
        if (interactive) print("> ");
        if (!std::getline(std::cin, line)) break;
        if (line.empty()) continue;
        const bool first_turn = history.empty();
        if (images && first_turn && line.find(vision::media_marker) == std::string::npos)
            for (size_t i = 0; i < images->images.size(); ++i) line.insert(0, vision::media_marker);
        messages.push_back({{"role", "user"}, {"content", line}});
        const std::string rendered = chat_template.render(messages, true);
        std::span<const float> logits;
        std::vector<float> media_logits;
        if (images) {
            loaded.session->truncate(0);
            vision::PromptRun run = images->evaluate(loaded, chat::without_template_bos(loaded.tokenizer, rendered));
            media_logits = logits_to_continue(run, loaded.model->info().n_vocab);
            logits = media_logits;
            history = run.text_tokens;
        } else {
            std::vector<tokenizer::TokenId> prompt = chat::prompt_tokens(loaded.tokenizer, rendered);
            // Keep the cache of the longest prefix this turn shares with what was computed before.
            size_t shared = 0;
            while (shared < history.size() && shared < prompt.size() && history[shared] == prompt[shared]) ++shared;
            if (shared == prompt.size()) --shared;  // the last prompt token must run to give logits
            loaded.session->truncate(uint32_t(shared));
            history.assign(prompt.begin(), prompt.end());
            logits = loaded.session->eval(std::span(prompt).subspan(shared));
        }
        for (tokenizer::TokenId id : history) sampler.accept(id);
        messages.push_back({{"role", "assistant"}, {"content", reply(loaded, sampler, logits, n_predict, history)}});
    }
    write_reports(options, loaded);
    return 0;
}

}  // namespace vkllm::cli
