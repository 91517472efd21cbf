// Tool calling per template family: the syntax a template implies, replies parsed back into calls
// (whole and as they stream), and conversations with tools rendered as the template's own jinja2
// rendering has them (tools/render_tool_conversation.py wrote the reference).
#include <doctest/doctest.h>

#include <fstream>

#include "chat/tool_calls.h"
#include "test_main.h"
#include "tokenizer/vocab.h"

namespace vkllm::chat {
namespace {

using json = nlohmann::ordered_json;

ChatTemplate template_of(std::string source) {
    tokenizer::Vocab vocab = tokenizer::default_vocab(tokenizer::Model::Spm, "default");
    vocab.tokens = {"<unk>", "<s>", "</s>"};
    vocab.bos = 1;
    vocab.eos = 2;
    vocab.chat_template = std::move(source);
    return ChatTemplate(vocab, "test");
}

const json weather_tools = json::parse(R"([{"type": "function", "function": {"name": "get_weather",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}])");

TEST_CASE("a template's tool syntax comes from its markers, and whether it reads tools") {
    const ToolFormat chatml = tool_format(template_of(
        "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}{% endfor %}"));
    CHECK(chatml.syntax == ToolSyntax::Hermes);
    CHECK_FALSE(chatml.native);
    const ToolFormat hermes = tool_format(template_of("{% if tools %}<tools>{{ tools }}</tools>{% endif %}<tool_call>"));
    CHECK(hermes.syntax == ToolSyntax::Hermes);
    CHECK(hermes.native);
    CHECK(tool_format(template_of("{{ tools }}<|python_tag|>")).syntax == ToolSyntax::Llama3);
    if (const auto path = test::shared_path("testdata/chat_templates/mistralai-Mistral-Small-3.1-24B-Instruct-2503.jinja")) {
        std::ifstream in(*path);
        const ToolFormat mistral = tool_format(template_of(std::string(std::istreambuf_iterator<char>(in), {})));
        CHECK(mistral.syntax == ToolSyntax::Mistral);
        CHECK(mistral.native);
    }
}

TEST_CASE("replies are parsed into calls for every syntax; malformed calls stay text") {
    ParsedReply hermes = parse_reply(ToolSyntax::Hermes,
                                     "Let me look.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n"
                                     "<tool_call>\n{\"name\": \"get_time\", \"arguments\": \"{\\\"zone\\\": \\\"CET\\\"}\"}\n</tool_call>");
    CHECK(hermes.content == "Let me look.");
    REQUIRE(hermes.calls.size() == 2);
    CHECK(hermes.calls[0].name == "get_weather");
    CHECK(hermes.calls[0].arguments == R"({"city":"Paris"})");
    CHECK(hermes.calls[1].arguments == R"({"zone":"CET"})");

    ParsedReply mistral = parse_reply(ToolSyntax::Mistral, R"([TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Lyon"}}])");
    CHECK(mistral.content.empty());
    REQUIRE(mistral.calls.size() == 1);
    CHECK(mistral.calls[0].arguments == R"({"city":"Lyon"})");
    ParsedReply mistral_args = parse_reply(ToolSyntax::Mistral, R"([TOOL_CALLS]get_weather[ARGS]{"city": "Nice"})");
    REQUIRE(mistral_args.calls.size() == 1);
    CHECK(mistral_args.calls[0].name == "get_weather");

    ParsedReply llama = parse_reply(ToolSyntax::Llama3, R"(<|python_tag|>{"name": "get_weather", "parameters": {"city": "Oslo"}})");
    REQUIRE(llama.calls.size() == 1);
    CHECK(llama.calls[0].arguments == R"({"city":"Oslo"})");

    // A reply cut in the middle of a call (max_tokens) keeps the calls before it and shows nothing of it.
    ParsedReply cut = parse_reply(ToolSyntax::Hermes, "Hi <tool_call>\n{\"name\": \"x\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n{\"name\": \"x\", \"argu");
    CHECK(cut.content == "Hi");
    CHECK(cut.calls.size() == 1);
    CHECK(parse_reply(ToolSyntax::Mistral, "[TOOL_CALLS] [{\"name\": \"x\", \"ar").content.empty());

    for (const auto& [syntax, text] : std::vector<std::pair<ToolSyntax, std::string>>{
             {ToolSyntax::Hermes, "<tool_call>\n{\"name\": \"x\", \"arguments\": [1]}\n</tool_call>"},
             {ToolSyntax::Hermes, "<tool_call>\n{\"arguments\": {}}\n</tool_call>"},
             {ToolSyntax::Mistral, "[TOOL_CALLS] [{\"name\": 3}]"},
             {ToolSyntax::Llama3, "{\"name\": \"x\", \"parameters\": [1]}"},
             {ToolSyntax::Llama3, "The answer is {braces}."}}) {
        CAPTURE(text);
        const ParsedReply reply = parse_reply(syntax, text);
        CHECK(reply.calls.empty());
        CHECK(reply.content.find(std::string_view(text).substr(0, 5)) != std::string::npos);
    }
}

TEST_CASE("a streamed reply shows its text at once, holds back what may open a call, and ends in the calls") {
    const std::string reply = "Sure. <tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
    for (size_t piece : {1, 3, 7}) {
        CAPTURE(piece);
        ReplySplitter splitter(ToolSyntax::Hermes);
        std::string shown;
        for (size_t at = 0; at < reply.size(); at += piece) {
            shown += splitter.push(std::string_view(reply).substr(at, piece));
            CHECK(shown.find('<') == std::string::npos);  // no part of the opening is ever shown
        }
        CHECK(shown == "Sure. ");
        const ParsedReply parsed = splitter.finish();
        REQUIRE(parsed.calls.size() == 1);
        CHECK(parsed.calls[0].name == "get_weather");
    }
    ReplySplitter plain(ToolSyntax::Hermes);
    std::string shown = plain.push("a <b> is not <tool");
    shown += plain.push("s> at all");
    const ParsedReply rest = plain.finish();
    CHECK(shown + rest.content == "a <b> is not <tools> at all");
    CHECK(rest.calls.empty());
}

TEST_CASE("a template without tools gets a Hermes preamble, earlier calls as text and results as user turns") {
    const json messages = json::parse(R"([
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
            "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "21 C"},
        {"role": "user", "content": "Thanks"}])");
    const ToolPrompt prompt = tool_prompt({ToolSyntax::Hermes, false}, messages, weather_tools);
    REQUIRE(prompt.messages.size() == 5);
    const std::string system = prompt.messages[0]["content"];
    CHECK(system.starts_with("Be brief.\n\n# Tools"));
    CHECK(system.find("\"name\":\"get_weather\"") != std::string::npos);
    CHECK(prompt.messages[2]["content"] == "<tool_call>\n{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Paris\"}}\n</tool_call>");
    CHECK(prompt.messages[3]["role"] == "user");
    CHECK(prompt.messages[3]["content"] == "<tool_response>\n21 C\n</tool_response>");
    CHECK(prompt.variables.empty());
    CHECK_THROWS_WITH(tool_prompt({ToolSyntax::Hermes, false}, messages, json::parse(R"([{"type": "function"}])")),
                      "tools[0] must be {\"type\": \"function\", \"function\": {...}}");
}

TEST_CASE("arguments nested past the JSON depth bound stay text, in prompts and in replies") {
    // 100,000 deep: parsed by core/json.h's bounded parser, refused before any tree is built, so no
    // copy, template value or dump recurses that deep (it overflowed the stack before).
    const std::string deep = "{\"a\":" + std::string(100000, '[') + std::string(100000, ']') + "}";
    json messages = json::array();
    messages.push_back({{"role", "user"}, {"content", "Hi"}});
    messages.push_back({{"role", "assistant"}, {"content", nullptr},
                        {"tool_calls", {{{"id", "c"}, {"type", "function"}, {"function", {{"name", "get_weather"}, {"arguments", deep}}}}}}});
    const ToolPrompt hermes = tool_prompt({ToolSyntax::Hermes, false}, messages, weather_tools);
    CHECK(hermes.messages[2]["content"].get<std::string>().find("\"arguments\":\"{\\\"a\\\":[[[") != std::string::npos);  // as a string
    const ToolPrompt native = tool_prompt({ToolSyntax::Hermes, true}, messages, weather_tools);
    CHECK(native.messages[1]["tool_calls"][0]["function"]["arguments"].is_string());
    const std::string rendered = template_of("{% for m in messages %}{{ m['tool_calls'] }}{% endfor %}").render(native.messages, false);
    CHECK(rendered.size() > deep.size());
    // 64 deep still becomes an object, as templates expect.
    const std::string shallow = "{\"a\":" + std::string(63, '[') + std::string(63, ']') + "}";
    messages[1]["tool_calls"][0]["function"]["arguments"] = shallow;
    CHECK(tool_prompt({ToolSyntax::Hermes, true}, messages, weather_tools).messages[1]["tool_calls"][0]["function"]["arguments"].is_object());
    // A model's reply that nests that deep is no call: it stays text.
    const std::string reply = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": " + deep + "}\n</tool_call>";
    const ParsedReply parsed = parse_reply(ToolSyntax::Hermes, reply);
    CHECK(parsed.calls.empty());
    CHECK(parsed.content == reply);
    CHECK(parse_reply(ToolSyntax::Llama3, "{\"name\": \"x\", \"parameters\": " + deep + "}").calls.empty());
}

TEST_CASE("a tool conversation renders through Mistral's template as transformers renders it") {
    const auto path = test::shared_path("testdata/chat_templates/mistralai-Mistral-Small-3.1-24B-Instruct-2503.jinja");
    if (!path) return;
    std::ifstream in(*path);
    const ChatTemplate mistral = template_of(std::string(std::istreambuf_iterator<char>(in), {}));
    std::ifstream reference_file(std::string(VKLLM_SOURCE_DIR) + "/tests/data/chat/mistral_tool_conversation.json");
    const json reference = json::parse(reference_file);
    const ToolPrompt prompt = tool_prompt(tool_format(mistral), reference["messages"], reference["tools"]);
    CHECK(mistral.render(prompt.messages, true, "2025-01-01", prompt.variables) == reference["output"].get<std::string>());
}

}  // namespace
}  // namespace vkllm::chat
