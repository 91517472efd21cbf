// vkllm tokenize / detokenize: text <-> token ids with a model's tokenizer (GGUF or tekken.json).
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "commands.h"
#include "core/error.h"
#include "tokenizer/tokenizer.h"

namespace vkllm::cli {

namespace {

constexpr const char* tokenize_usage =
    "usage: vkllm tokenize -m MODEL [--no-bos] [--parse-special] (TEXT | --file F)";
constexpr const char* detokenize_usage = "usage: vkllm detokenize -m MODEL IDS...";

std::string read_bytes(const std::string& path) {
    std::ifstream file(path, std::ios::binary);
    if (!file) fail("{}: cannot open", path);
    std::ostringstream bytes;
    bytes << file.rdbuf();
    return bytes.str();
}

}  // namespace

int tokenize(Args args) {
    std::string model, text, file;
    bool add_special = true, parse_special = false, have_text = false;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string_view arg = args[i];
        const bool has_value = i + 1 < args.size();
        if (arg == "-m" && has_value) model = args[++i];
        else if (arg == "--file" && has_value) file = args[++i];
        else if (arg == "--no-bos") add_special = false;  // as llama.cpp's tokenizer tests: nothing added
        else if (arg == "--parse-special") parse_special = true;
        else if (!have_text && (!arg.starts_with("-") || arg == "-")) text = arg, have_text = true;
        else fail("unexpected argument '{}'; {}", arg, tokenize_usage);
    }
    if (model.empty() || have_text == !file.empty()) fail("{}", tokenize_usage);
    if (!file.empty()) text = read_bytes(file);
    const tokenizer::Tokenizer tok(tokenizer::load_vocab(model));
    std::string line;
    for (tokenizer::TokenId id : tok.tokenize(text, add_special, parse_special)) {
        if (!line.empty()) line += ' ';
        line += std::to_string(id);
    }
    std::printf("%s\n", line.c_str());
    return 0;
}

int detokenize(Args args) {
    std::string model;
    std::vector<tokenizer::TokenId> ids;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string_view arg = args[i];
        if (arg == "-m" && i + 1 < args.size()) {
            model = args[++i];
            continue;
        }
        char* end = nullptr;
        const std::string digits(arg);
        const long id = std::strtol(digits.c_str(), &end, 10);
        if (digits.empty() || *end != '\0' || id < 0 || id > INT32_MAX) fail("'{}' is not a token id; {}", arg, detokenize_usage);
        ids.push_back(tokenizer::TokenId(id));
    }
    if (model.empty()) fail("{}", detokenize_usage);
    const tokenizer::Tokenizer tok(tokenizer::load_vocab(model));
    const std::string text = tok.detokenize(ids, false, true);
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::printf("\n");
    return 0;
}

}  // namespace vkllm::cli
