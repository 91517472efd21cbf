#pragma once
// From a model's tokenizer.chat_template to prompt token ids. A template that names one of
// llama.cpp's built-in formats ("mistral-v7-tekken", "gemma", ...) renders with it; any other
// template is Jinja, rendered as transformers does (bos_token / eos_token are the vocabulary's).
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chat/formats.h"
#include "chat/jinja.h"
#include "tokenizer/tokenizer.h"

namespace vkllm::chat {

class ChatTemplate {
public:
    // `name` stands for the template in errors. Throws when the vocabulary has no template or
    // the Jinja source does not parse.
    ChatTemplate(const tokenizer::Vocab& vocab, std::string name);

    // `messages`: a JSON array of {role, content}; content is a string or a list of blocks
    // ({type: text, text} / {type: image}). `extra` variables (tools, ...) reach Jinja templates.
    std::string render(const nlohmann::ordered_json& messages, bool add_generation_prompt,
                       std::string_view today = {}, const nlohmann::ordered_json& extra = {}) const;

    std::optional<BuiltinFormat> builtin() const { return builtin_; }
    // The template as the model (or a template file) gives it: Jinja source, or a built-in format's name.
    const std::string& source() const { return source_; }

private:
    std::string name_;
    std::string source_;
    std::optional<BuiltinFormat> builtin_;
    std::optional<JinjaTemplate> jinja_;
    std::string bos_token_, eos_token_;
};

// A rendered prompt without the BOS text a template printed, where tokenizing adds BOS itself (the
// vocabulary asks for it): tokenized as is, it would start with two.
std::string_view without_template_bos(const tokenizer::Tokenizer& tokenizer, std::string_view rendered);

// Token ids of a rendered prompt: control tokens in the text are parsed, and BOS is added as the
// vocabulary asks unless the text already starts with it (templates that print bos_token).
std::vector<tokenizer::TokenId> prompt_tokens(const tokenizer::Tokenizer& tokenizer, std::string_view rendered);

}  // namespace vkllm::chat
