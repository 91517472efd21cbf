#pragma once
// Internal to vkllm_chat: the two lexing steps of the Jinja2 subset (jinja_lex.cpp).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace vkllm::chat::jinja {

// Text between tags, or one tag's content (without its delimiters and "-"/"+" markers), with
// the whitespace rules already applied to the text around it.
struct Segment {
    enum class Kind { Text, Variable, Block, Comment };
    Kind kind;
    std::string text;
    int line = 1;
    bool strip_before = false, keep_before = false, strip_after = false;
};

struct Token {
    enum class Kind { Name, Int, Float, String, Operator, End };
    Kind kind;
    std::string text;  // a string literal already unescaped
    int line = 1;
};

std::vector<Segment> split_segments(std::string_view source, const std::string& name);
std::vector<Token> tokenize(std::string_view text, int line, const std::string& name);

}  // namespace vkllm::chat::jinja
