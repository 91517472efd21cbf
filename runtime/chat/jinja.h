#pragma once
// A Jinja2 subset that renders the chat templates shipped in GGUF files (tokenizer.chat_template)
// the way transformers does: ImmutableSandboxedEnvironment with trim_blocks and lstrip_blocks,
// loop controls, its `tojson`, `raise_exception` and `strftime_now` globals.
//
// Supported: text, {{ }}, {% if/elif/else %}, {% for ... in ... if ... %} with loop.* and else,
// {% set %} (names, namespace attributes, blocks), {% macro %}, break/continue, {% raw %},
// comments, "-" whitespace control; Python-like values, operators, slices, method calls on
// strings and dicts, and the common filters and tests. Scoping follows Jinja2: assignments inside
// a for loop stay in the loop, namespace() objects carry values out.
//
// Anything else (a syntax error, an unknown filter, raise_exception) is a vkllm::Error naming the
// template and line. Rendering is bounded in steps and output size, so no input hangs it.
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace vkllm::chat {

class JinjaTemplate {
public:
    // `name` stands for the template in error messages, e.g. "model.gguf:tokenizer.chat_template".
    JinjaTemplate(std::string_view source, std::string name);
    ~JinjaTemplate();
    JinjaTemplate(JinjaTemplate&&) noexcept;
    JinjaTemplate& operator=(JinjaTemplate&&) noexcept;

    // `variables`: the template's inputs (messages, add_generation_prompt, bos_token, tools, ...).
    // `today` ("YYYY-MM-DD") fixes what strftime_now() sees; empty means the current local time.
    std::string render(const nlohmann::ordered_json& variables, std::string_view today = {}) const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace vkllm::chat
