#pragma once
// GBNF grammars as llama.cpp's llama-grammar parses them: rules `name ::= alternatives` one per line,
// `|`, groups `( )`, `*` `+` `?` `{m}` `{m,}` `{m,n}`, "strings", character classes `[a-z]` `[^...]`,
// `.` (any character), the escapes \xHH \uHHHH \UHHHHHHHH \t \n \r \\ \" \[ \] \-, `#` comments, and
// `root` as the start rule. Parsed once into an immutable, flat form that GrammarMatcher walks:
// repetitions become helper rules as llama.cpp rewrites them (S{2,4} -> S S S', S' ::= S S'' | ...).
// Token references (<...>) are refused. Malformed, undefined, left-recursive, oversized or too
// ambiguous grammars, and those whose root never finishes, fail with one sentence naming the line,
// column or rule. Parsing and its checks take time linear in the grammar's size.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/error.h"

namespace vkllm::sampling {

// A grammar that cannot go on while generating: more ambiguous than GrammarMatcher follows (past
// what the parse-time checks can see), or no token it allows is left to pick (logit_bias banned
// them all). It comes from the request's grammar, schema or tools: the client's mistake, answered
// as one (a 4xx before the first token, an error event after it), not as the server's.
class ConstraintError : public Error {
public:
    using Error::Error;
};

constexpr uint32_t max_code_point = 0x10FFFF;

// A set of Unicode code points: a bitmap for ASCII, sorted disjoint ranges above it.
class CharSet {
public:
    // The union of inclusive ranges (in any order, overlapping or not), or its complement.
    CharSet(std::vector<std::pair<uint32_t, uint32_t>> ranges, bool negated);

    bool contains(uint32_t c) const {
        return c < 128 ? (ascii_[c >> 6] >> (c & 63)) & 1 : contains_wide(c);
    }
    bool intersects(uint32_t first, uint32_t last) const;  // any of [first, last]
    bool operator==(const CharSet&) const = default;

private:
    bool contains_wide(uint32_t c) const;

    uint64_t ascii_[2] = {0, 0};
    std::vector<std::pair<uint32_t, uint32_t>> wide_;  // ranges of code points >= 128
};

class Grammar {
public:
    // Limits against hostile input: the text, the elements after expanding repetitions, one
    // repetition's count, and how deeply groups nest; then, checked for every place of the parsed
    // grammar, the ways a character may come next there (the stacks GrammarMatcher opens) and the
    // rule expansions that reach them (GrammarLimits' defaults, so that what parses also runs).
    static constexpr size_t max_text_bytes = 4u << 20;
    static constexpr size_t max_elements = 4u << 20;
    static constexpr uint64_t max_repetitions = 100000;
    static constexpr int max_nesting = 200;
    static constexpr size_t max_ways = 4096;
    static constexpr size_t max_expansion_steps = 1u << 16;

    // Throws vkllm::Error, e.g. "grammar line 3, column 9 (rule 'item'): expected ')' to close the
    // group opened at line 3, column 2".
    static std::shared_ptr<const Grammar> parse(std::string_view text, std::string_view root_rule = "root");

    // Each rule's alternatives are sequences of elements, each sequence ending in an End element.
    enum class Kind : uint8_t {
        Chars,  // one code point of char_set(value)
        Rule,   // the rule `value`
        End,    // the end of an alternative
    };
    struct Element {
        Kind kind;
        uint32_t value;
    };

    const Element& element(uint32_t position) const { return elements_[position]; }
    std::span<const uint32_t> alternatives(uint32_t rule) const {  // where each alternative starts
        return std::span(alternative_starts_).subspan(rule_alternatives_[rule], rule_alternatives_[rule + 1] - rule_alternatives_[rule]);
    }
    const CharSet& char_set(uint32_t index) const { return char_sets_[index]; }
    uint32_t root() const { return root_; }
    // The fewest code points that finish the alternative from element `position` on (its End: 0);
    // none_shorter when nothing finishes it.
    uint32_t rest_length(uint32_t position) const { return rest_length_[position]; }
    static constexpr uint32_t none_shorter = UINT32_MAX;
    size_t n_elements() const { return elements_.size(); }
    size_t n_rules() const { return rule_names_.size(); }
    const std::string& rule_name(uint32_t rule) const { return rule_names_[rule]; }  // helper rules: "item_3"

private:
    friend class GbnfParser;
    Grammar() = default;

    std::vector<Element> elements_;
    std::vector<uint32_t> alternative_starts_;  // by rule, then alternative
    std::vector<uint32_t> rule_alternatives_;   // rule r's starts: [rule_alternatives_[r], [r + 1])
    std::vector<CharSet> char_sets_;
    std::vector<std::string> rule_names_;
    std::vector<uint32_t> rest_length_;  // by position
    uint32_t root_ = 0;

    void measure_rest(const std::vector<uint32_t>& rule_length);
};

}  // namespace vkllm::sampling
