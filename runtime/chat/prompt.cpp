#include "chat/prompt.h"

#include "core/error.h"

namespace vkllm::chat {

namespace {

// The text of a message for the built-in formats: a string, or its text blocks joined.
std::string plain_content(const nlohmann::ordered_json& content, std::string_view name) {
    if (content.is_string()) return content.get<std::string>();
    std::string text;
    if (content.is_array()) {
        for (const auto& block : content)
            if (block.is_object() && block.value("type", "") == "text" && block.contains("text") && block["text"].is_string())
                text += block["text"].get<std::string>();
        return text;
    }
    if (content.is_null()) return text;
    fail("{}: message content must be a string or a list of blocks", name);
}

std::string token_text(const tokenizer::Vocab& vocab, tokenizer::TokenId id) {
    return vocab.has(id) ? vocab.tokens[size_t(id)] : std::string();
}

}  // namespace

ChatTemplate::ChatTemplate(const tokenizer::Vocab& vocab, std::string name)
    : name_(std::move(name)), source_(vocab.chat_template), bos_token_(token_text(vocab, vocab.bos)),
      eos_token_(token_text(vocab, vocab.eos)) {
    if (vocab.chat_template.empty()) fail("{}: the model has no tokenizer.chat_template", name_);
    builtin_ = builtin_format_named(vocab.chat_template);
    if (!builtin_) jinja_.emplace(vocab.chat_template, name_);
}

std::string ChatTemplate::render(const nlohmann::ordered_json& messages, bool add_generation_prompt,
                                 std::string_view today, const nlohmann::ordered_json& extra) const {
    if (!messages.is_array()) fail("{}: messages must be a JSON array", name_);
    if (builtin_) {
        std::vector<Message> plain;
        for (const auto& message : messages) {
            if (!message.is_object() || !message.contains("role") || !message["role"].is_string())
                fail("{}: every message needs a string 'role'", name_);
            plain.push_back({message["role"].get<std::string>(), plain_content(message.value("content", nlohmann::ordered_json()), name_)});
        }
        return render_builtin(*builtin_, plain, add_generation_prompt);
    }
    nlohmann::ordered_json variables = extra.is_object() ? extra : nlohmann::ordered_json::object();
    variables["messages"] = messages;
    variables["add_generation_prompt"] = add_generation_prompt;
    variables["bos_token"] = bos_token_;
    variables["eos_token"] = eos_token_;
    return jinja_->render(variables, today);
}

std::string_view without_template_bos(const tokenizer::Tokenizer& tokenizer, std::string_view rendered) {
    const tokenizer::Vocab& vocab = tokenizer.vocab();
    if (vocab.add_bos && vocab.has(vocab.bos) && rendered.starts_with(vocab.tokens[size_t(vocab.bos)]))
        rendered.remove_prefix(vocab.tokens[size_t(vocab.bos)].size());
    return rendered;
}

std::vector<tokenizer::TokenId> prompt_tokens(const tokenizer::Tokenizer& tokenizer, std::string_view rendered) {
    return tokenizer.tokenize(without_template_bos(tokenizer, rendered), true, true);
}

}  // namespace vkllm::chat
