// vkllm template -m MODEL --messages FILE.json [--date YYYY-MM-DD] [--no-generation-prompt]:
// the prompt a model's chat template makes of a conversation, printed byte for byte.
#include <cstdio>
#include <fstream>
#include <sstream>

#include "chat/prompt.h"
#include "commands.h"
#include "core/error.h"

namespace vkllm::cli {

namespace {

constexpr const char* usage =
    "usage: vkllm template -m MODEL --messages FILE.json [--date YYYY-MM-DD] [--no-generation-prompt]";

bool is_date(std::string_view text) {
    if (text.size() != 10 || text[4] != '-' || text[7] != '-') return false;
    for (size_t i : {0, 1, 2, 3, 5, 6, 8, 9})
        if (text[i] < '0' || text[i] > '9') return false;
    return true;
}

}  // namespace

int chat_template(Args args) {
    std::string model, messages_path, date;
    bool add_generation_prompt = true;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string_view arg = args[i];
        const bool has_value = i + 1 < args.size();
        if (arg == "-m" && has_value) model = args[++i];
        else if (arg == "--messages" && has_value) messages_path = args[++i];
        else if (arg == "--date" && has_value) date = args[++i];
        else if (arg == "--no-generation-prompt") add_generation_prompt = false;
        else fail("unexpected argument '{}'; {}", arg, usage);
    }
    if (model.empty() || messages_path.empty()) fail("{}", usage);
    if (!date.empty() && !is_date(date)) fail("--date {}: expected YYYY-MM-DD", date);

    std::ifstream file(messages_path, std::ios::binary);
    if (!file) fail("{}: cannot open", messages_path);
    nlohmann::ordered_json input;
    try {
        input = nlohmann::ordered_json::parse(file);
    } catch (const nlohmann::json::exception& error) {
        fail("{}: not JSON: {}", messages_path, error.what());
    }
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
