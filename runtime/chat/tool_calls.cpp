#include "chat/tool_calls.h"

#include <algorithm>

#include "core/error.h"
#include "core/json.h"
#include "core/text.h"
#include "sampling/json_schema.h"

namespace vkllm::chat {
namespace {

using json = nlohmann::ordered_json;

constexpr std::string_view hermes_open = "<tool_call>", hermes_close = "</tool_call>";
constexpr std::string_view mistral_open = "[TOOL_CALLS]", mistral_args = "[ARGS]";
constexpr std::string_view python_tag = "<|python_tag|>";

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::string_view trimmed(std::string_view text) {
    while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
    while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
    return text;
}

// Where the JSON object or array starting at text[start] ends (one past its closing bracket), found
// by bracket depth outside strings; none when it does not close.
std::optional<size_t> json_end(std::string_view text, size_t start) {
    int depth = 0;
    bool in_string = false;
    for (size_t i = start; i < text.size(); ++i) {
        const char c = text[i];
        if (in_string) {
            if (c == '\\') ++i;
            else if (c == '"') in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == '{' || c == '[') {
            ++depth;
        } else if (c == '}' || c == ']') {
            if (--depth == 0) return i + 1;
        }
    }
    return std::nullopt;
}

// The JSON value at text[start] (an object or array) and where it ends; none when malformed.
std::optional<std::pair<json, size_t>> json_at(std::string_view text, size_t start) {
    if (start >= text.size() || (text[start] != '{' && text[start] != '[')) return std::nullopt;
    const std::optional<size_t> end = json_end(text, start);
    if (!end) return std::nullopt;
    std::optional<json> value = try_parse_json(text.substr(start, *end - start));
    if (!value) return std::nullopt;
    return std::pair{std::move(*value), *end};
}

size_t skip_space(std::string_view text, size_t at) {
    while (at < text.size() && is_space(text[at])) ++at;
    return at;
}

// A call's JSON that starts at `at` (or has not started yet) and runs to the end of the text unclosed:
// the reply was cut (max_tokens, the context) in the middle of it.
bool cut_off(std::string_view text, size_t at) {
    return at >= text.size() || ((text[at] == '{' || text[at] == '[') && !json_end(text, at));
}

// A call object {"name": "...", "arguments" | "parameters": {...} or a JSON string of one}.
std::optional<ToolCall> call_of(const json& object) {
    if (!object.is_object() || !object.contains("name") || !object["name"].is_string()) return std::nullopt;
    const json* arguments = nullptr;
    for (const char* key : {"arguments", "parameters"})
        if (object.contains(key)) arguments = &object[key];
    json parsed = json::object();
    if (arguments && arguments->is_string()) parsed = try_parse_json(arguments->get<std::string>()).value_or(json());
    else if (arguments) parsed = *arguments;
    if (!parsed.is_object()) return std::nullopt;
    return ToolCall{object["name"].get<std::string>(), parsed.dump(-1, ' ', false, json::error_handler_t::replace)};
}

ParsedReply parse_hermes(std::string_view text) {
    ParsedReply reply;
    size_t at = 0;
    while (at < text.size()) {
        const size_t open = text.find(hermes_open, at);
        if (open == std::string_view::npos) break;
        const size_t body = skip_space(text, open + hermes_open.size());
        if (cut_off(text, body)) {  // a call the reply's end cut: nothing to show of it
            reply.content += text.substr(at, open - at);
            at = text.size();
            break;
        }
        const auto value = json_at(text, body);
        const std::optional<ToolCall> call = value ? call_of(value->first) : std::nullopt;
        if (!call) break;
        size_t end = skip_space(text, value->second);
        if (text.substr(end).starts_with(hermes_close)) end += hermes_close.size();
        reply.content += text.substr(at, open - at);
        reply.calls.push_back(*call);
        at = end;
    }
    reply.content += text.substr(at);
    reply.content = std::string(trimmed(reply.content));
    return reply;
}

ParsedReply parse_mistral(std::string_view text) {
    ParsedReply reply;
    const size_t open = text.find(mistral_open);
    if (open == std::string_view::npos) return {std::string(text), {}};
    size_t at = skip_space(text, open + mistral_open.size());
    if (cut_off(text, at)) return {std::string(trimmed(text.substr(0, open))), {}};
    if (at < text.size() && text[at] == '[') {  // [{"name": ..., "arguments": ...}, ...]
        const auto value = json_at(text, at);
        if (!value || !value->first.is_array()) return {std::string(text), {}};
        for (const json& object : value->first) {
            const std::optional<ToolCall> call = call_of(object);
            if (!call) return {std::string(text), {}};
            reply.calls.push_back(*call);
        }
        at = value->second;
    } else {  // name[ARGS]{...}, repeated (the newer templates' form)
        while (at < text.size()) {
            const size_t args = text.find(mistral_args, at);
            if (args == std::string_view::npos) break;
            const auto value = json_at(text, skip_space(text, args + mistral_args.size()));
            if (!value || !value->first.is_object()) break;
            reply.calls.push_back({std::string(trimmed(text.substr(at, args - at))), value->first.dump()});
            at = skip_space(text, value->second);
            if (text.substr(at).starts_with(mistral_open)) at = skip_space(text, at + mistral_open.size());
        }
        if (reply.calls.empty()) return {std::string(text), {}};
    }
    reply.content = std::string(trimmed(std::string(text.substr(0, open)) + std::string(text.substr(at))));
    return reply;
}

ParsedReply parse_llama3(std::string_view text) {
    std::string_view body = trimmed(text);
    if (body.starts_with(python_tag)) body = trimmed(body.substr(python_tag.size()));
    ParsedReply reply;
    size_t at = 0;
    while (at < body.size()) {  // calls may follow each other, separated by ';'
        const auto value = json_at(body, at);
        const std::optional<ToolCall> call = value ? call_of(value->first) : std::nullopt;
        if (!call) return {std::string(text), {}};
        reply.calls.push_back(*call);
        at = skip_space(body, value->second);
        if (at < body.size() && body[at] == ';') at = skip_space(body, at + 1);
    }
    if (reply.calls.empty()) return {std::string(text), {}};
    return reply;
}

// The tools in OpenAI's shape, checked: each {type: function, function: {name, parameters?}}.
void check_tools(const json& tools) {
    if (!tools.is_array()) fail("tools must be an array");
    for (size_t i = 0; i < tools.size(); ++i) {
        const json& tool = tools[i];
        if (!tool.is_object() || tool.value("type", "") != "function" || !tool.contains("function") || !tool["function"].is_object())
            fail("tools[{}] must be {{\"type\": \"function\", \"function\": {{...}}}}", i);
        const json& function = tool["function"];
        if (!function.contains("name") || !function["name"].is_string() || function["name"].get<std::string>().empty())
            fail("tools[{}].function.name must be a non-empty string", i);
        if (function.contains("parameters") && !function["parameters"].is_object())
            fail("tools[{}].function.parameters must be a JSON Schema object", i);
    }
}

// Arguments as a JSON object where the client sent a JSON string of one (what templates expect).
json with_object_arguments(const json& message) {
    json copy = message;
    if (!copy.contains("tool_calls") || !copy["tool_calls"].is_array()) return copy;
    for (json& call : copy["tool_calls"]) {
        if (!call.is_object() || !call.contains("function") || !call["function"].is_object()) continue;
        json& function = call["function"];
        if (function.contains("arguments") && function["arguments"].is_string()) {
            std::optional<json> parsed = try_parse_json(function["arguments"].get<std::string>());
            if (parsed && parsed->is_object()) function["arguments"] = std::move(*parsed);
        }
    }
    return copy;
}

std::string text_of(const json& content) {
    if (content.is_string()) return content.get<std::string>();
    if (content.is_null()) return {};
    return content.dump();
}

// The Hermes preamble for templates that know no tools.
std::string hermes_preamble(const json& tools) {
    std::string text =
        "# Tools\n\nYou can call functions to help with the user's request. Their signatures are inside "
        "<tools></tools>:\n<tools>\n";
    for (const json& tool : tools) text += tool.dump() + "\n";
    text +=
        "</tools>\n\nTo call a function, write a JSON object with its name and arguments inside "
        "<tool_call></tool_call>, one block per call:\n<tool_call>\n{\"name\": <function name>, \"arguments\": "
        "<arguments as a JSON object>}\n</tool_call>";
    return text;
}

// Hermes spelling of earlier calls and results, for templates that render only role and content.
json hermes_messages(const json& messages, const json& tools) {
    json out = json::array();
    const std::string preamble = hermes_preamble(tools);
    const bool has_system = !messages.empty() && messages[0].value("role", "") == "system";
    out.push_back({{"role", "system"}, {"content", has_system ? text_of(messages[0]["content"]) + "\n\n" + preamble : preamble}});
    for (size_t i = has_system ? 1 : 0; i < messages.size(); ++i) {
        const json message = with_object_arguments(messages[i]);
        const std::string role = message.value("role", "");
        if (role == "assistant" && message.contains("tool_calls") && message["tool_calls"].is_array()) {
            std::string text = text_of(message.value("content", json()));
            for (const json& call : message["tool_calls"]) {
                const json& function = call.value("function", json::object());
                const json body = {{"name", function.value("name", "")}, {"arguments", function.value("arguments", json::object())}};
                text += (text.empty() ? "" : "\n") + std::string(hermes_open) + "\n" + body.dump() + "\n" + std::string(hermes_close);
            }
            out.push_back({{"role", "assistant"}, {"content", text}});
        } else if (role == "tool") {
            const std::string response = "<tool_response>\n" + text_of(message.value("content", json())) + "\n</tool_response>";
            if (!out.empty() && out.back()["role"] == "user" && i > 0 && messages[i - 1].value("role", "") == "tool")
                out.back()["content"] = out.back()["content"].get<std::string>() + "\n" + response;
            else
                out.push_back({{"role", "user"}, {"content", response}});
        } else {
            out.push_back(message);
        }
    }
    return out;
}

}  // namespace

ToolFormat tool_format(const ChatTemplate& chat_template) {
    const std::string_view source = chat_template.source();
    const bool reads_tools = source.find("tools") != std::string_view::npos;
    if (source.find(mistral_open) != std::string_view::npos) return {ToolSyntax::Mistral, reads_tools};
    if (source.find(hermes_open) != std::string_view::npos) return {ToolSyntax::Hermes, reads_tools};
    if (source.find(python_tag) != std::string_view::npos || (reads_tools && source.find("ipython") != std::string_view::npos))
        return {ToolSyntax::Llama3, reads_tools};
    return {ToolSyntax::Hermes, false};
}

ToolPrompt tool_prompt(const ToolFormat& format, const json& messages, const json& tools) {
    check_tools(tools);
    if (!format.native) return {hermes_messages(messages, tools), json::object()};
    json converted = json::array();
    for (const json& message : messages) converted.push_back(with_object_arguments(message));
    return {std::move(converted), {{"tools", tools}}};
}

std::string_view call_opening(ToolSyntax syntax) {
    switch (syntax) {
        case ToolSyntax::Hermes: return "<tool_call>\n";
        case ToolSyntax::Mistral: return mistral_open;
        case ToolSyntax::Llama3: return "";
    }
    return "";
}

std::shared_ptr<const sampling::Grammar> call_grammar(ToolSyntax syntax, const json& tools, bool parallel) {
    check_tools(tools);
    // One call: {"name": one tool's name, "arguments": what its parameters allow}, in that order.
    const char* arguments_key = syntax == ToolSyntax::Llama3 ? "parameters" : "arguments";
    json any_call = json::array();
    for (const json& tool : tools) {
        const json& function = tool["function"];
        const json parameters = function.contains("parameters") ? function["parameters"] : json{{"type", "object"}};
        any_call.push_back({{"type", "object"},
                            {"properties", {{"name", {{"const", function["name"]}}}, {arguments_key, parameters}}},
                            {"required", {"name", arguments_key}}});
    }
    std::string call_rules;
    try {
        call_rules = sampling::json_schema_to_gbnf(any_call.size() == 1 ? any_call[0] : json{{"anyOf", any_call}});
    } catch (const Error& error) {
        fail("the tools' parameters: {}", error.what());
    }
    // The schema's grammar starts at its `root`: one call. Around it, the syntax's own text.
    std::string reply;
    switch (syntax) {
        case ToolSyntax::Hermes:  // the opening <tool_call>\n is already written
            reply = parallel ? R"(tool-reply ::= root "\n</tool_call>" ("\n<tool_call>\n" root "\n</tool_call>")*)"
                             : R"(tool-reply ::= root "\n</tool_call>")";
            break;
        case ToolSyntax::Mistral:  // after [TOOL_CALLS]
            reply = parallel ? R"(tool-reply ::= " "? "[" root ("," " "? root)* "]")" : R"(tool-reply ::= " "? "[" root "]")";
            break;
        case ToolSyntax::Llama3:
            reply = parallel ? R"(tool-reply ::= root ("; " root)*)" : "tool-reply ::= root";
            break;
    }
    return sampling::Grammar::parse(reply + "\n" + call_rules, "tool-reply");
}

ParsedReply parse_reply(ToolSyntax syntax, std::string_view text) {
    switch (syntax) {
        case ToolSyntax::Hermes: return parse_hermes(text);
        case ToolSyntax::Mistral: return parse_mistral(text);
        case ToolSyntax::Llama3: return parse_llama3(text);
    }
    return {std::string(text), {}};
}

std::string ReplySplitter::push(std::string_view text) {
    held_ += text;
    if (in_call_) return {};
    if (syntax_ == ToolSyntax::Llama3) {
        // A Llama 3 call is the whole reply: decided by its first character.
        if (!started_) {
            const size_t first = held_.find_first_not_of(" \t\r\n");
            if (first == std::string::npos) return {};
            started_ = true;
            if (held_[first] == '{' || held_[first] == python_tag[0]) {
                in_call_ = true;
                return {};
            }
        }
        return std::exchange(held_, {});
    }
    const std::string_view opening = syntax_ == ToolSyntax::Hermes ? hermes_open : mistral_open;
    const size_t found = held_.find(opening);
    if (found != std::string::npos) {
        in_call_ = true;
        std::string shown = held_.substr(0, found);
        held_.erase(0, found);
        return shown;
    }
    // Keep back the longest tail that may grow into the opening.
    const size_t keep = marker_start_at_end(held_, opening);
    std::string shown = held_.substr(0, held_.size() - keep);
    held_.erase(0, held_.size() - keep);
    return shown;
}

ParsedReply ReplySplitter::finish() {
    if (!in_call_) return {std::exchange(held_, {}), {}};
    return parse_reply(syntax_, std::exchange(held_, {}));
}

}  // namespace vkllm::chat
