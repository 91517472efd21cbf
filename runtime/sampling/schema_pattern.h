#pragma once
// A JSON Schema `pattern` (an ECMA-262 regular expression) as GBNF: the expression generates the
// text between a JSON string's quotes, so that the decoded string matches the pattern. Unanchored
// sides match anywhere (JSON Schema's semantics), so they get any characters around them.
// Supported: literals, escapes (\d \D \w \W \s \S \t \n \r \f \v \0 \xHH \uHHHH \u{H...} and escaped
// punctuation), classes with ranges and negation, `.`, groups ( ), (?: ), (?<name> ), alternation,
// * + ? {m} {m,} {m,n} (lazy forms too: the language is the same), ^ and $ at the ends of the
// top-level alternatives. Refused with one sentence: lookaround, backreferences, \b \B, \p{...},
// anchors elsewhere.
#include <string>
#include <string_view>

namespace vkllm::sampling {

// Throws vkllm::Error naming what in the pattern is not supported or malformed (the caller adds
// where the pattern is).
std::string pattern_to_gbnf(std::string_view pattern);

}  // namespace vkllm::sampling
