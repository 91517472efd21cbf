// libFuzzer entry for the server's request parser (built with -DVKLLM_FUZZ=ON and clang; run by
// scripts/fuzz). Any body must either parse or throw ApiError, the server's 4xx: a crash, a sanitizer
// report, a hang or any other exception is a bug. Both endpoints read every input, with and without
// the limits a server passes (images allowed, a prompt bound). A chat request that parses then goes
// where the server takes it next: its messages through the tool-call conversions (which parse each
// call's arguments string again) and a jinja template (every value of the tree), and its grammar or
// schema through the compiler, where only vkllm::Error (a 400 naming the limit) may come out. The
// seeds hold a body nested 30,000 deep, tool-call arguments nested as deep inside their string, and
// a grammar and a schema that the compiler's limits refuse.
#include <cstddef>
#include <cstdint>
#include <string>

#include "chat/prompt.h"
#include "chat/tool_calls.h"
#include "core/error.h"
#include "openai.h"
#include "sampling/json_schema.h"
#include "tokenizer/vocab.h"

namespace {

using namespace vkllm;

// A template that reads every message's fields, tool calls and arguments included.
const chat::ChatTemplate& template_reading_everything() {
    static const chat::ChatTemplate chat_template = [] {
        tokenizer::Vocab vocab = tokenizer::default_vocab(tokenizer::Model::Spm, "fuzz");
        vocab.tokens = {"<unk>", "<s>", "</s>"};
        vocab.bos = 1;
        vocab.eos = 2;
        vocab.chat_template = "{% for m in messages %}{{ m['role'] }}{{ m['content'] }}{% for c in m['tool_calls'] or [] %}"
                              "{{ c['function']['arguments'] | tojson }}{% endfor %}{% endfor %}{{ tools | tojson }}";
        return chat::ChatTemplate(vocab, "fuzz");
    }();
    return chat_template;
}

// What the server does with a parsed chat request before it runs: render its prompt, compile its
// constraint. Errors are vkllm::Error, answered as 400s.
void follow_request(const server::CompletionRequest& request) {
    try {
        for (bool native : {false, true}) {
            const chat::ToolPrompt prompt = chat::tool_prompt({chat::ToolSyntax::Hermes, native}, request.messages,
                                                              request.tools.is_null() ? nlohmann::ordered_json::array() : request.tools);
            (void)template_reading_everything().render(prompt.messages, true, {}, prompt.variables);
        }
    } catch (const Error&) {
    }
    try {
        if (!request.grammar.empty()) (void)sampling::Grammar::parse(request.grammar);
        if (!request.json_schema.is_null()) (void)sampling::json_schema_grammar(request.json_schema);
    } catch (const Error&) {
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string body(reinterpret_cast<const char*>(data), size);
    const server::ParseLimits served{.images = true, .max_prompt_bytes = 4096, .n_ctx = 512, .n_vocab = 32000};
    for (auto endpoint : {server::Endpoint::ChatCompletions, server::Endpoint::Completions}) {
        for (const server::ParseLimits& limits : {server::ParseLimits{}, served}) {
            try {
                const server::CompletionRequest request = server::parse_request(endpoint, body, limits);
                if (endpoint == server::Endpoint::ChatCompletions && !limits.images) follow_request(request);  // once per input
            } catch (const server::ApiError&) {
            }
        }
    }
    return 0;
}
