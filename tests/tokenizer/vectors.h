#pragma once
// Shared helpers of the tokenizer tests: the reference data directory and llama.cpp's
// test-tokenizer-0 file formats.
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "tokenizer/vocab.h"
#include "test_main.h"

namespace vkllm::test {

// ../shared/testdata/tokenizer, or nullopt (the caller skips) when it is missing.
inline std::optional<std::filesystem::path> tokenizer_data() { return shared_path("testdata/tokenizer"); }

inline std::string read_file(const std::filesystem::path& path) {
    std::ifstream file(path, std::ios::binary);
    std::ostringstream text;
    text << file.rdbuf();
    return text.str();
}

// .inp: test strings, each followed by "\n__ggml_vocab_test__\n".
inline std::vector<std::string> read_inp(const std::filesystem::path& path) {
    const std::string text = read_file(path);
    const std::string separator = "\n__ggml_vocab_test__\n";
    std::vector<std::string> strings;
    for (size_t at = 0, next; (next = text.find(separator, at)) != std::string::npos; at = next + separator.size())
        strings.push_back(text.substr(at, next - at));
    return strings;
}

// .out: one line of space-separated ids per test string.
inline std::vector<std::vector<tokenizer::TokenId>> read_out(const std::filesystem::path& path) {
    std::istringstream text(read_file(path));
    std::vector<std::vector<tokenizer::TokenId>> lines;
    for (std::string line; std::getline(text, line);) {
        std::istringstream fields(line);
        std::vector<tokenizer::TokenId> ids;
        for (tokenizer::TokenId id; fields >> id;) ids.push_back(id);
        lines.push_back(std::move(ids));
    }
    return lines;
}

}  // namespace vkllm::test
