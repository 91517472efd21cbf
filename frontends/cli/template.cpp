// vkllm template -m MODEL --messages FILE.json [--date YYYY-MM-DD] [--no-generation-prompt]:
// the prompt a model's chat template makes of a conversation, printed byte for byte.
#include <cstdio>

#include "chat/prompt.h"
#include "commands.h"
#include "core/error.h"
#include "core/file.h"
#include "core/json.h"
#include "options.h"

namespace vkllm::cli {

namespace {

bool is_date(std::string_view text) {
    if (text.size() != 10 || text[4] != '-' || text[7] != '-') return false;
    for (size_t i : {0, 1, 2, 3, 5, 6, 8, 9})
        if (text[i] < '0' || text[i] > '9') return false;
    return true;
}

}  // namespace

int chat_template(Args args) {
    std::string model, messages_path, date;
    bool no_generation_prompt = false;
    Options parser("template", "-m MODEL --messages FILE.json [options]",
                   "The prompt a model's chat template makes of a conversation, printed byte for byte.");
    parser.add("-m,--model", model, "FILE", "the model whose tokenizer.chat_template to render").required()
        .add("--messages", messages_path, "FILE.json", "the messages array, or {\"messages\": [...], \"tools\": [...]}")
        .required()
        .add("--date", date, "YYYY-MM-DD", "the date the template sees; today when not given")
        .flag("--no-generation-prompt", no_generation_prompt, "leave out the assistant turn's opening");
    if (!parser.parse(args)) return 0;
    const bool add_generation_prompt = !no_generation_prompt;
    if (!date.empty() && !is_date(date)) fail("--date {}: expected YYYY-MM-DD", date);

    nlohmann::ordered_json input = parse_json(read_text_file(messages_path, "messages file"), messages_path);
    // Either the messages array itself, or {"messages": [...], "tools": [...], ...}.
    nlohmann::ordered_json extra = nlohmann::ordered_json::object();
    if (input.is_object()) {
        extra = input;
        input = extra["messages"];
        extra.erase("messages");
    }
    const tokenizer::Vocab vocab = tokenizer::load_vocab(model);
    const chat::ChatTemplate tmpl(vocab, model + ":tokenizer.chat_template");
    const std::string prompt = tmpl.render(input, add_generation_prompt, date, extra);
    std::fwrite(prompt.data(), 1, prompt.size(), stdout);
    return 0;
}

}  // namespace vkllm::cli
