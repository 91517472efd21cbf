#include "chat/formats.h"

namespace vkllm::chat {

namespace {

std::string trim(std::string_view text) {
    const auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; };
    size_t begin = 0, end = text.size();
    while (begin < end && is_space(text[begin])) ++begin;
    while (end > begin && is_space(text[end - 1])) --end;
    return std::string(text.substr(begin, end - begin));
}

// v3-tekken: one [INST] per turn, a system message joins the next user text, no spaces.
std::string mistral_v3_tekken(std::span<const Message> messages) {
    std::string out;
    bool inside_turn = false;
    for (const Message& message : messages) {
        if (!inside_turn) {
            out += "[INST]";
            inside_turn = true;
        }
        if (message.role == "system") {
            out += message.content + "\n\n";
        } else if (message.role == "user") {
            out += message.content + "[/INST]";
        } else {
            out += message.content + "</s>";
            inside_turn = false;
        }
    }
    return out;
}

std::string mistral_v7(std::span<const Message> messages, std::string_view space) {
    std::string out;
    for (const Message& message : messages) {
        if (message.role == "system") out += "[SYSTEM_PROMPT]" + std::string(space) + message.content + "[/SYSTEM_PROMPT]";
        else if (message.role == "user") out += "[INST]" + std::string(space) + message.content + "[/INST]";
        else out += std::string(space) + message.content + "</s>";
    }
    return out;
}

// Gemma has no system turn: system text is trimmed, gathered and prefixed to the next user turn.
std::string gemma(std::span<const Message> messages, bool add_generation_prompt) {
    std::string out, system;
    for (const Message& message : messages) {
        if (message.role == "system") {
            system += trim(message.content);
            continue;
        }
        const std::string role = message.role == "assistant" ? "model" : message.role;
        out += "<start_of_turn>" + role + "\n";
        if (!system.empty() && role != "model") {
            out += system + "\n\n";
            system.clear();
        }
        out += trim(message.content) + "<end_of_turn>\n";
    }
    if (add_generation_prompt) out += "<start_of_turn>model\n";
    return out;
}

}  // namespace

std::optional<BuiltinFormat> builtin_format_named(std::string_view name) {
    if (name == "mistral-v3-tekken") return BuiltinFormat::MistralV3Tekken;
    if (name == "mistral-v7") return BuiltinFormat::MistralV7;
    if (name == "mistral-v7-tekken") return BuiltinFormat::MistralV7Tekken;
    if (name == "gemma") return BuiltinFormat::Gemma;
    return std::nullopt;
}

std::optional<BuiltinFormat> detect_builtin_format(std::string_view chat_template) {
    if (auto named = builtin_format_named(chat_template)) return named;
    const auto has = [&](std::string_view needle) { return chat_template.find(needle) != std::string_view::npos; };
    if ((has("[INST]") || chat_template.starts_with("mistral")) && has("[SYSTEM_PROMPT]")) return BuiltinFormat::MistralV7;
    if (has("<start_of_turn>")) return BuiltinFormat::Gemma;
    return std::nullopt;
}

std::string render_builtin(BuiltinFormat format, std::span<const Message> messages, bool add_generation_prompt) {
    switch (format) {
        case BuiltinFormat::MistralV3Tekken: return mistral_v3_tekken(messages);
        case BuiltinFormat::MistralV7: return mistral_v7(messages, " ");
        case BuiltinFormat::MistralV7Tekken: return mistral_v7(messages, "");
        case BuiltinFormat::Gemma: return gemma(messages, add_generation_prompt);
    }
    return {};
}

}  // namespace vkllm::chat
