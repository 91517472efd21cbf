#include "engine/conversation.h"

#include <algorithm>

#include "core/error.h"
#include "engine/media.h"

namespace vkllm::engine {

Conversation::Conversation(Engine& engine, std::string system_prompt, std::vector<vision::Image> images)
    : engine_(engine), system_prompt_(std::move(system_prompt)), all_images_(std::move(images)) {
    if (!all_images_.empty() && !engine_.encoder()) fail("images need the model's image encoder: give its mmproj file");
    clear();
}

void Conversation::clear() {
    messages_ = nlohmann::ordered_json::array();
    if (!system_prompt_.empty()) messages_.push_back({{"role", "system"}, {"content", system_prompt_}});
    images_ = all_images_;
}

Conversation::Prompt Conversation::render() {
    const std::string rendered = engine_.chat_template().render(messages_, true);
    Prompt prompt;
    if (images_.empty()) {
        prompt.tokens = chat::prompt_tokens(engine_.tokenizer(), rendered);
        prompt.n_positions = uint32_t(prompt.tokens.size());
        return prompt;
    }
    vision::Encoder& encoder = *engine_.encoder();
    prompt.chunks = vision::tokenize_with_media(engine_.tokenizer(), encoder.hparams().projector,
                                                chat::without_template_bos(engine_.tokenizer(), rendered), images_.size());
    for (const vision::PromptChunk& chunk : prompt.chunks)
        prompt.n_positions += chunk.image < 0 ? uint32_t(chunk.tokens.size())
                                              : encoder.encode(images_[size_t(chunk.image)]).n_tokens;
    return prompt;
}

bool Conversation::drop_oldest_turn() {
    const auto is_user = [](const nlohmann::ordered_json& message) { return message["role"] == "user"; };
    const auto first = std::find_if(messages_.begin(), messages_.end(), is_user);
    const auto next = std::find_if(first + 1, messages_.end(), is_user);
    if (first == messages_.end() || next == messages_.end()) return false;
    messages_.erase(first, next);
    images_.clear();  // they went with the first user turn
    return true;
}

TurnPrompt Conversation::add_user_turn(const std::string& text, uint32_t reply_room) {
    const bool first_turn = std::none_of(messages_.begin(), messages_.end(),
                                         [](const auto& message) { return message["role"] == "user"; });
    std::string content = text;
    if (first_turn && !images_.empty() && content.find(vision::media_marker) == std::string::npos)
        for (size_t i = 0; i < images_.size(); ++i) content.insert(0, vision::media_marker);
    messages_.push_back({{"role", "user"}, {"content", content}});

    model::Session& session = engine_.session();
    const uint32_t n_ctx = session.n_ctx();
    reply_room = std::min(reply_room, n_ctx / 4);
    TurnPrompt result;
    Prompt prompt = render();
    while (prompt.n_positions + reply_room > n_ctx && drop_oldest_turn()) {
        ++result.dropped_turns;
        prompt = render();
    }
    result.n_positions = prompt.n_positions;
    if (prompt.n_positions >= n_ctx) {  // at least one position must stay free for the reply
        messages_.erase(messages_.end() - 1);
        return result;
    }
    result.accepted = true;
    if (!prompt.chunks.empty()) {
        session.truncate(0);
        const vision::PromptRun run = vision::run_prompt(session, *engine_.encoder(), prompt.chunks, images_);
        media_logits_ = logits_to_continue(run, engine_.info().n_vocab);
        result.logits = media_logits_;
        return result;
    }
    // Keep the cache of the longest prefix this prompt shares with what was computed before.
    const std::span<const int32_t> history = session.history(0);
    size_t shared = 0;
    while (shared < history.size() && shared < prompt.tokens.size() && history[shared] == prompt.tokens[shared]) ++shared;
    if (shared == prompt.tokens.size()) --shared;  // the last prompt token must run to give logits
    session.truncate(uint32_t(shared));
    result.logits = session.eval(std::span(prompt.tokens).subspan(shared));
    return result;
}

void Conversation::add_reply(const std::string& text) { messages_.push_back({{"role", "assistant"}, {"content", text}}); }

}  // namespace vkllm::engine
