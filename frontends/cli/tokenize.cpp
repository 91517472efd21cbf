// vkllm tokenize / detokenize: text <-> token ids with a model's tokenizer (GGUF or tekken.json).
#include <charconv>
#include <cstdio>
#include <string>

#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "core/error.h"
#include "core/file.h"
#include "options.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace vkllm::cli {
namespace {

// A piece that is not whole UTF-8 (a byte-fallback token, part of a character) is its byte values,
// as llama-server's /tokenize gives it with_pieces.
nlohmann::json piece_json(const std::string& piece) {
    if (tokenizer::valid_utf8(piece) == piece) return piece;
    nlohmann::json bytes = nlohmann::json::array();
    for (char byte : piece) bytes.push_back(uint8_t(byte));
    return bytes;
}

}  // namespace

int tokenize(Args args) {
    std::string model, text, prompt, file;
    bool no_bos = false, parse_special = false, ids_only = false, json = false;
    Options parser("tokenize", "-m MODEL (TEXT | -p TEXT | -f FILE) [options]",
                   "The tokens of a text with a model's tokenizer (a GGUF or tekken.json), one 'id -> piece' per line as "
                   "llama-tokenize prints them.");
    parser.positional(text, "TEXT", "the text ('-' is a text, not standard input)", false)
        .add("-m,--model", model, "FILE", "the model (GGUF or tekken.json) whose tokenizer to use").required()
        .add("-p,--prompt", prompt, "TEXT", "the text, as an option")
        .add("-f,--file", file, "FILE", "tokenize the file's bytes")
        .flag("--no-bos", no_bos, "add nothing (no BOS), as llama.cpp's tokenizer tests do")
        .flag("--parse-special", parse_special, "turn special-token text (<s>, <|im_start|>) into its token")
        .flag("--ids", ids_only, "print only the ids, as [1, 2, 3]")
        .flag("--json", json, "print [{\"id\": 1, \"piece\": \"<s>\"}, ...]; a piece that is not whole UTF-8 is its "
                              "bytes, [195]");
    if (!parser.parse(args)) return 0;
    if (parser.given("TEXT") + parser.given("-p") + parser.given("-f") != 1)
        fail("give the text once: as an argument, with -p TEXT or with -f FILE");
    if (parser.given("-p")) text = prompt;
    if (parser.given("-f")) text = read_text_file(file, "text file");
    const tokenizer::Tokenizer tok(tokenizer::load_vocab(model));
    const std::vector<tokenizer::TokenId> ids = tok.tokenize(text, !no_bos, parse_special);
    if (json) {
        nlohmann::json out = nlohmann::json::array();
        for (tokenizer::TokenId id : ids) out.push_back({{"id", id}, {"piece", piece_json(tok.token_to_piece(id, true))}});
        std::printf("%s\n", out.dump().c_str());
    } else if (ids_only) {
        std::printf("[%s]\n", fmt::format("{}", fmt::join(ids, ", ")).c_str());
    } else {
        for (tokenizer::TokenId id : ids) std::printf("%6d -> '%s'\n", id, tok.token_to_piece(id, true).c_str());
    }
    return 0;
}

int detokenize(Args args) {
    std::string model;
    std::vector<std::string> id_texts;
    Options parser("detokenize", "-m MODEL IDS...", "The text of token ids.");
    parser.positionals(id_texts, "ID", "token ids")
        .add("-m,--model", model, "FILE", "the model (GGUF or tekken.json) whose tokenizer to use").required();
    if (!parser.parse(args)) return 0;
    std::vector<tokenizer::TokenId> ids;
    for (const std::string& text : id_texts) {
        int32_t id = -1;
        auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), id);
        if (error != std::errc() || end != text.data() + text.size() || id < 0)
            fail("'{}' is not a token id (a whole number of at least 0)", text);
        ids.push_back(id);
    }
    const tokenizer::Tokenizer tok(tokenizer::load_vocab(model));
    // Ids can end inside a character or hold bytes that make none: the text printed is well-formed.
    const std::string text = tokenizer::valid_utf8(tok.detokenize(ids, false, true));
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::printf("\n");
    return 0;
}

}  // namespace vkllm::cli
