#pragma once
// The chat formats llama.cpp hard-codes in `llm_chat_apply_template` (model-notes.md E) for the
// model families vkllm runs. None emits BOS: that comes from tokenizing with add_special.
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace vkllm::chat {

struct Message {
    std::string role;     // "system", "user", "assistant"
    std::string content;
};

enum class BuiltinFormat { MistralV3Tekken, MistralV7, MistralV7Tekken, Gemma };

// The format a tokenizer.chat_template names outright ("mistral-v7-tekken", "gemma", ...).
std::optional<BuiltinFormat> builtin_format_named(std::string_view name);
// llama.cpp's `llm_chat_detect_template`: a name, or the heuristics for a Jinja source
// ([INST] with [SYSTEM_PROMPT] -> mistral-v7, never v7-tekken; <start_of_turn> -> gemma).
std::optional<BuiltinFormat> detect_builtin_format(std::string_view chat_template);

std::string render_builtin(BuiltinFormat format, std::span<const Message> messages, bool add_generation_prompt);

}  // namespace vkllm::chat
