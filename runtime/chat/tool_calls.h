#pragma once
// Tool calling as each chat-template family spells it (llama.cpp's common/chat does the same per
// family): how the tools and earlier calls reach the prompt, how a reply's calls are read back, and
// what a reply that must call a tool starts with. Three syntaxes:
//   Hermes   <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>   (ChatML, Qwen, Hermes)
//   Mistral  [TOOL_CALLS][{"name": ..., "arguments": {...}}, ...]         (Mistral v3+ templates)
//   Llama3   {"name": ..., "parameters": {...}}                            (Llama 3.1-3.3 JSON calls)
// A template that renders tools itself gets them as Jinja's `tools` and the messages as OpenAI sent
// them; any other (ChatML, Gemma) gets a Hermes system preamble listing them, earlier calls written
// into the assistant's text and tool results as user turns.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "chat/prompt.h"
#include "sampling/grammar.h"

namespace vkllm::chat {

enum class ToolSyntax { Hermes, Mistral, Llama3 };

struct ToolFormat {
    ToolSyntax syntax = ToolSyntax::Hermes;
    bool native = false;  // the template renders `tools`, assistant tool_calls and tool messages itself
};

// From the template's source: the family's markers, and whether it reads `tools`.
ToolFormat tool_format(const ChatTemplate& chat_template);

// What to render for a conversation with tools: the messages (OpenAI's shape: assistant `tool_calls`
// with `function.arguments` as a JSON string, `tool` messages with `tool_call_id`) and the Jinja
// variables beside them. `tools`: OpenAI's [{type: function, function: {name, description, parameters}}].
struct ToolPrompt {
    nlohmann::ordered_json messages;
    nlohmann::ordered_json variables;  // {"tools": ...} for native templates
};
ToolPrompt tool_prompt(const ToolFormat& format, const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools);

// The text a call opens with; a reply made to call a tool starts with it (Llama 3 calls open with
// nothing but their JSON).
std::string_view call_opening(ToolSyntax syntax);

struct ToolCall {
    std::string name;
    std::string arguments;  // a JSON object, compact
};

struct ParsedReply {
    std::string content;  // the text around the calls
    std::vector<ToolCall> calls;
};

// A whole reply: its calls (well-formed ones only; a malformed call stays text) and the rest.
ParsedReply parse_reply(ToolSyntax syntax, std::string_view text);

// Splits a reply as it streams: text before a call goes out at once, except what may be the start
// of a call's opening; from an opening on, everything waits for parse_reply at the end.
class ReplySplitter {
public:
    explicit ReplySplitter(ToolSyntax syntax) : syntax_(syntax) {}
    std::string push(std::string_view text);  // the content that can be shown now
    ParsedReply finish();                     // the calls, and content not shown yet

private:
    ToolSyntax syntax_;
    std::string held_;       // not shown: a possible opening, or all from a call on
    bool in_call_ = false;
    bool started_ = false;   // Llama 3: the reply's first non-space character was seen
};

// The grammar of the rest of a reply that opened a call: one call (several when `parallel`) of one of
// `tools`, each naming it and giving arguments valid against its `parameters` JSON Schema. Throws a
// vkllm::Error naming the tool whose schema cannot be converted.
std::shared_ptr<const sampling::Grammar> call_grammar(ToolSyntax syntax, const nlohmann::ordered_json& tools, bool parallel);

}  // namespace vkllm::chat
