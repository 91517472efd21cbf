// GBNF grammars: the parser takes what llama.cpp takes and names the place of what it refuses; the
// matcher accepts exactly the grammar's language (checked against std::regex on random strings),
// character by character and byte by byte (UTF-8 split anywhere); the token mask from the trie walk
// equals checking every token alone.
#include <doctest/doctest.h>

#include <regex>

#include "core/error.h"
#include "sampling/grammar.h"
#include "sampling/grammar_matcher.h"
#include "sampling/sampler.h"
#include "sampling/utf8.h"

using namespace vkllm::sampling;

namespace {

std::string parse_error(std::string_view text) {
    try {
        Grammar::parse(text);
    } catch (const vkllm::Error& error) {
        return error.what();
    }
    return "";
}

GrammarMatcher matcher(std::string_view text) { return GrammarMatcher(Grammar::parse(text), nullptr); }

bool matches(std::string_view grammar, std::string_view text) {
    GrammarMatcher m = matcher(grammar);
    return m.accept_text(text) && m.can_end();
}

// A prefix of the language: the matcher takes it (and it may or may not be complete).
bool takes(std::string_view grammar, std::string_view text) { return matcher(grammar).accept_text(text); }

// llama.cpp's grammars/json.gbnf, as distributed.
constexpr std::string_view json_gbnf = R"(root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws

object ::=
  "{" ws (
            string ":" ws value
    ("," ws string ":" ws value)*
  )? "}" ws

array  ::=
  "[" ws (
            value
    ("," ws value)*
  )? "]" ws

string ::=
  "\"" (
    [^"\\\x7F\x00-\x1F] |
    "\\" (["\\bfnrt] | "u" [0-9a-fA-F]{4}) # escapes
  )* "\"" ws

number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws

# Optional space: by convention, applied in this grammar after literal chars when allowed
ws ::= | " " | "\n" [ \t]{0,20}
)";

}  // namespace

TEST_CASE("the parser takes llama.cpp's grammar syntax") {
    CHECK(parse_error(json_gbnf).empty());
    CHECK(parse_error("root ::= [a-z]+ \"!\"? # trailing comment\r\n# a comment line\r\nother ::= root{2,3} | \"x\"{4} | "
                      "\"y\"{1,} | (root | \"z\")*\n")
              .empty());
    CHECK(parse_error("root ::= \"\\x41\\u00e9\\U0001F600\\t\\n\\r\\\\\\\"\\[\\]\\-\" [\\]\\[a-c\\-] [^\\x00-\\x1F] . \"\"").empty());
    CHECK(parse_error("root ::= (\n  \"a\"\n  | \"b\" # inside a group new lines are space\n)").empty());
    CHECK(parse_error("root ::= | \"a\"").empty());  // an empty first alternative (json-schema's space rule)
    CHECK(parse_error("  \n# leading comment\nroot ::= [a-]").empty());
    CHECK(Grammar::parse("x ::= \"a\"\nroot ::= x x")->n_rules() == 2);
}

TEST_CASE("malformed grammars fail with one sentence naming the place and rule") {
    const auto error = [](std::string_view text) { return parse_error(text); };
    CHECK(error("root ::= \"abc") == "grammar line 1, column 10 (rule 'root'): the string is not closed");
    CHECK(error("root ::= [abc") == "grammar line 1, column 10 (rule 'root'): the character class is not closed");
    CHECK(error("root ::= []") == "grammar line 1, column 10 (rule 'root'): the character class is empty");
    CHECK(error("root ::= item\nitem ::= (\"a\" | \"b\"") ==
          "grammar line 2, column 20 (rule 'item'): expected ')' to close the group opened at line 2, column 10, "
          "found the end of the grammar");
    CHECK(error("root = \"a\"") == "grammar line 1, column 6: expected '::=' after the rule name 'root', found '='");
    CHECK(error("root ::= \"a\"\n  | \"b\"") == "grammar line 2, column 3: expected a rule name (letters, digits and '-'), "
                                                "found '|'");
    CHECK(error("root ::= \"a\" )") == "grammar line 1, column 14 (rule 'root'): unexpected ')' (expected a symbol, '|', or "
                                      "a new line ending the rule)");
    CHECK(error("root ::= item_x") == "grammar line 1, column 14 (rule 'root'): unexpected '_' (expected a symbol, '|', "
                                      "or a new line ending the rule)");
    CHECK(error("root ::= \"\\q\"") == "grammar line 1, column 11 (rule 'root'): unknown escape '\\q' (known: \\x \\u \\U "
                                      "\\t \\n \\r \\\\ \\\" \\[ \\] \\-)");
    CHECK(error("root ::= \"\\x4\"") == "grammar line 1, column 11 (rule 'root'): '\\x' needs 2 hex digits after it");
    CHECK(error("root ::= * \"a\"") == "grammar line 1, column 10 (rule 'root'): '*' has nothing before it to repeat");
    CHECK(error("root ::= \"a\"{3,1}") == "grammar line 1, column 13 (rule 'root'): the repetition's maximum 1 is below "
                                         "its minimum 3");
    CHECK(error("root ::= \"a\"{x}") == "grammar line 1, column 14 (rule 'root'): expected a number after '{', found 'x'");
    CHECK(error("root ::= \"a\"{2") == "grammar line 1, column 15 (rule 'root'): expected '}' to close the repetition, "
                                      "found the end of the grammar");
    CHECK(error("root ::= \"a\"{999999}") == "grammar line 1, column 14 (rule 'root'): the repetition count 999999 is "
                                            "above the 100000 allowed");
    CHECK(error("root ::= <think>") == "grammar line 1, column 10 (rule 'root'): token references ('<...>', '!<...>') "
                                       "are not supported; write the text");
    CHECK(error("root ::= a\na ::= \"x\"\na ::= \"y\"") == "grammar line 3, column 1 (rule 'a'): the rule is defined a second "
                                                          "time, differently (first at line 2, column 1)");
    CHECK(error("root ::= a\na ::= (\"x\" | [y])*  \na ::= (\"x\" | [y])*").empty());  // again, the same: joined grammars
    CHECK(error("root ::= item \"x\"\nitem ::= missing") == "grammar line 2, column 10 (rule 'item'): rule 'missing' is "
                                                            "used but never defined");
    CHECK(error("start ::= \"a\"") == "grammar: there is no 'root' rule to start from");
    CHECK(error("root ::= \"\xff\"") == "grammar line 1, column 11 (rule 'root'): invalid UTF-8 (byte 0xff)");
    CHECK(error(std::string_view("root ::= \"a\0\"", 13)) == "grammar line 1, column 12: the grammar holds a NUL byte");
    CHECK(error("root ::= é") == "grammar line 1, column 10 (rule 'root'): unexpected 'é' (expected a symbol, '|', or a "
                                 "new line ending the rule)");
}

TEST_CASE("left recursion is refused, through nullable rules too") {
    const std::string expected = "grammar: rule 'expr' is left-recursive (it reaches itself before matching a character), "
                                 "which the grammar engine cannot run; rewrite it to match a character first";
    CHECK(parse_error("root ::= expr\nexpr ::= expr \"+\" term | term\nterm ::= [0-9]") == expected);
    CHECK(parse_error("root ::= expr\nexpr ::= opt expr \"x\" | \"y\"\nopt ::= \"a\"?") == expected);
    CHECK(parse_error("root ::= expr\nexpr ::= (\"a\"? expr) | \"b\"") == expected);
    // A repetition of something that may be empty would loop without consuming: left recursion too.
    CHECK(parse_error("root ::= (\"a\"?)*").starts_with("grammar: rule 'root' is left-recursive"));
    CHECK(parse_error("root ::= expr\nexpr ::= term (\"+\" expr)?\nterm ::= [0-9]").empty());  // right recursion is fine
}

TEST_CASE("limits against hostile grammars") {
    std::string deep = "root ::= ";
    for (int i = 0; i < 300; ++i) deep += "(";
    CHECK(parse_error(deep).ends_with("groups nest more than 200 deep"));
    CHECK(parse_error("root ::= ((\"a\"{1000}){1000}){1000}").empty());  // each level repeats one reference
    std::string wide = "root ::= ";
    for (int i = 0; i < 50; ++i) wide += "[a]{100000} ";
    CHECK(parse_error(wide).ends_with("the grammar expands to more than 4194304 elements (repetitions included)"));
    CHECK(parse_error(std::string(Grammar::max_text_bytes + 1, ' ')).starts_with("grammar: the text is 4194305 bytes"));
    // Ambiguity that would make every step walk thousands of stacks is refused when met.
    // After a^n c, a "b" may close any of the n open levels: n stacks.
    GrammarMatcher ambiguous(Grammar::parse("root ::= x\nx ::= \"a\" x \"b\"? | \"c\""), nullptr);
    CHECK(ambiguous.accept_text(std::string(1000, 'a') + "c"));
    CHECK(ambiguous.n_stacks() == 1001);
    ambiguous.reset();
    CHECK_THROWS_WITH_AS(ambiguous.accept_text(std::string(5000, 'a') + "c"),
                         "the grammar is too ambiguous: more than 4096 ways to go on at once", ConstraintError);
    // Nested repetitions, each splitting the text among its levels in every way: refused long before
    // it runs for minutes.
    std::string nested = "root ::= ";
    for (int i = 0; i < 24; ++i) nested += "(";
    nested += "\"a\"";
    for (int i = 0; i < 24; ++i) nested += ")+";
    GrammarMatcher exploding(Grammar::parse(nested), nullptr);
    CHECK_THROWS_WITH_AS(exploding.accept_text(std::string(64, 'a')), doctest::Contains("the grammar is too ambiguous"),
                         ConstraintError);
    // And by the work one call takes, where each character stays within its own limit.
    GrammarMatcher limited(Grammar::parse(json_gbnf), nullptr, {.call_work = 1000});
    CHECK(limited.accept_text("{\"a\": [1, 2]"));
    CHECK_THROWS_WITH_AS(limited.accept_text(", \"" + std::string(400, 'x') + "\": 3}"),
                         "the grammar is too ambiguous: one token or mask takes more than 1000 stack steps", ConstraintError);
}

TEST_CASE("grammars the matcher could not start are refused when parsed, in linear time") {
    // Each bomb answers in well under a second (the checks are linear in the grammar's size).
    const std::string wide = "grammar: rule 'root' may go on in more than 4096 ways at once";
    CHECK(parse_error("root ::= (\"a\"{0,100000}){0,100000}").starts_with(wide));
    std::string alternatives = "root ::= \"x0\"";
    for (int i = 1; i < 8000; ++i) alternatives += fmt::format(" | \"x{}\"", i);
    CHECK(parse_error(alternatives).starts_with(wide));
    std::string optional = "root ::=";
    for (int i = 0; i < 70000; ++i) optional += " \"a\"?";
    CHECK(parse_error(optional).starts_with(wide));
    // The same width one level down: refused at the rule where the matcher would expand it.
    CHECK(parse_error("root ::= \"{\" item\nitem ::= " + alternatives.substr(9)).starts_with("grammar: rule 'item' may go on"));
    // 100,000 rules, each beginning with the next, before the first character.
    std::string nested = "root ::= r0\n";
    for (int i = 0; i < 100000; ++i) nested += fmt::format("r{} ::= r{} \"b\"\n", i, i + 1);
    nested += "r100000 ::= \"a\"\n";
    CHECK(parse_error(nested).starts_with("grammar: rule 'r"));
    CHECK(parse_error(nested).find("more than 65536 rule expansions to reach a character") != std::string::npos);
    // At the limits, not past them: 4096 alternatives that cannot be empty parse and match.
    std::string at_limit = "root ::= \"x0\"";
    for (int i = 1; i < 4096; ++i) at_limit += fmt::format(" | \"x{}\"", i);
    CHECK(matches(at_limit, "x4095"));
    // A chain of 100,000 rules, each finishing only through the next: their shortest lengths settle
    // in one pass (relaxing to a fixed point took a pass per rule).
    std::string chain = "root ::= r0\n";
    for (int i = 0; i < 100000; ++i) chain += fmt::format("r{} ::= \"a\" r{}\n", i, i + 1);
    chain += "r100000 ::= \"c\"\n";
    GrammarMatcher along_chain(Grammar::parse(chain), nullptr);
    CHECK(along_chain.distance_to_end() == 100001);
    CHECK(along_chain.accept_text(std::string(100000, 'a') + "c"));
    CHECK(along_chain.can_end());
}

TEST_CASE("a root that can never finish is refused") {
    CHECK(parse_error("root ::= \"a\" root") ==
          "grammar: rule 'root' can never finish: each of its alternatives needs a rule that needs it again, so no text matches it");
    CHECK(parse_error("root ::= \"{\" x \"}\"\nx ::= \"a\" root").starts_with("grammar: rule 'root' can never finish"));
    CHECK(parse_error("root ::= \"a\" root | \"b\"").empty());  // a base case
}

TEST_CASE("the matcher accepts what the grammar says, and nothing else") {
    CHECK(matches("root ::= \"abc\"", "abc"));
    CHECK_FALSE(matches("root ::= \"abc\"", "ab"));
    CHECK(takes("root ::= \"abc\"", "ab"));
    CHECK_FALSE(takes("root ::= \"abc\"", "abd"));
    CHECK_FALSE(takes("root ::= \"abc\"", "abcd"));
    for (std::string_view text : {"", "a", "aa", "aaa"}) CHECK(matches("root ::= \"a\"{0,3}", text) == true);
    CHECK_FALSE(matches("root ::= \"a\"{0,3}", "aaaa"));
    CHECK(matches("root ::= \"ab\"{2}", "abab"));
    CHECK_FALSE(matches("root ::= \"ab\"{2}", "ab"));
    CHECK(matches("root ::= [a-c]{2,} \"!\"", "cab!"));
    CHECK_FALSE(matches("root ::= [a-c]{2,} \"!\"", "c!"));
    CHECK(matches("root ::= [^a-y]+", "z{|"));
    CHECK_FALSE(matches("root ::= [^a-y]+", "zb"));
    CHECK(matches("root ::= . . .", "\n\t\xf0\x9f\x98\x80"));  // any character: new line, tab, emoji
    CHECK(matches("root ::= [\\-\\]a]+", "-]a"));
    CHECK(matches("root ::= \"\\u00e9\\U0001F600\"", "é😀"));
    CHECK(matches("root ::= [é-ë]", "ê"));
    CHECK_FALSE(matches("root ::= [é-ë]", "e"));
    CHECK(matches(json_gbnf, R"({"a": [1, -2.5e3, "x\n\u00e9"], "b": {"c": null}})"));
    CHECK_FALSE(matches(json_gbnf, R"({"a": [1, 2,]})"));
    CHECK_FALSE(matches(json_gbnf, R"({"a": "unterminated})"));
    GrammarMatcher m = matcher("root ::= \"x\"+");
    CHECK_FALSE(m.can_end());
    CHECK(m.accept_text("xx"));
    CHECK(m.can_end());
    CHECK(m.can_continue());
    CHECK_FALSE(m.accept_text("y"));  // refused text changes nothing
    CHECK(m.accept_text("x"));
    m.reset();
    CHECK_FALSE(m.can_end());
    GrammarMatcher done = matcher("root ::= \"x\"");
    CHECK(done.accept_text("x"));
    CHECK(done.can_end());
    CHECK_FALSE(done.can_continue());
}

TEST_CASE("UTF-8 split across calls waits for the rest of its character") {
    const std::string_view grammar = "root ::= [α-γ] \"😀\"";
    const std::string text = "β😀";
    for (size_t split = 0; split <= text.size(); ++split) {
        GrammarMatcher m = matcher(grammar);
        REQUIRE(m.accept_text(text.substr(0, split)));
        CHECK(m.can_end() == (split == text.size()));
        REQUIRE(m.accept_text(text.substr(split)));
        CHECK(m.can_end());
    }
    GrammarMatcher m = matcher(grammar);
    CHECK(m.accept_text("\xce"));           // could become α, β or γ
    CHECK_FALSE(m.can_end());               // a partial character is never complete
    CHECK_FALSE(m.accept_text("\xb0"));     // ΰ (U+03B0) is outside [α-γ]
    CHECK(m.accept_text("\xb3"));           // γ
    CHECK_FALSE(matcher(grammar).accept_text("\xcf"));    // U+03C0.. can never be in [α-γ]
    CHECK_FALSE(matcher("root ::= .").accept_text("\x80"));          // a continuation byte alone
    CHECK_FALSE(matcher("root ::= .").accept_text("\xc0\x80"));      // overlong
    CHECK_FALSE(matcher("root ::= .").accept_text("\xed\xa0\x80"));  // a surrogate
    CHECK_FALSE(matcher("root ::= .").accept_text("\xed\xa0"));      // on its way to a surrogate
    CHECK_FALSE(matcher("root ::= .").accept_text("\xf4\x90"));      // past U+10FFFF
    CHECK_FALSE(matcher("root ::= .").accept_text("\xe2(\xa1"));     // a lead byte followed by ASCII
    CHECK(matcher("root ::= [^a]").accept_text("\xf4\x8f\xbf\xbf"));  // U+10FFFF
}

TEST_CASE("the matcher's language equals std::regex's on random strings") {
    struct Case {
        std::string_view gbnf, regex;
    };
    const Case cases[] = {
        {"root ::= (\"ab\" | [c-e]+){1,3} \"x\"?", "(ab|[c-e]+){1,3}x?"},
        {"root ::= item (\",\" item)*\nitem ::= [a-b] [c-e]? | \"e\"{2,}", "([a-b][c-e]?|e{2,})(,([a-b][c-e]?|e{2,}))*"},
        {"root ::= ([^ab] | \"a\" \"b\"?){0,4} \"b\"", "([^ab]|ab?){0,4}b"},
        {"root ::= x y\nx ::= \"a\"? \"b\"?\ny ::= (\"c\" | ) x", "a?b?(c|)a?b?"},
    };
    Rng rng(99);
    const std::string alphabet = "abcde,x";
    for (const Case& c : cases) {
        CAPTURE(c.gbnf);
        const std::regex regex(std::string(c.regex));
        const auto grammar = Grammar::parse(c.gbnf);
        int accepted = 0;
        for (int i = 0; i < 3000; ++i) {
            std::string text;
            const size_t length = rng.next() % 9;
            for (size_t j = 0; j < length; ++j) text += alphabet[rng.next() % alphabet.size()];
            CAPTURE(text);
            GrammarMatcher m(grammar, nullptr);
            const bool full = m.accept_text(text) && m.can_end();
            CHECK(full == std::regex_match(text, regex));
            accepted += full;
        }
        CHECK(accepted > 20);  // the strings hit the language, so the comparison means something
    }
}

namespace {

// A toy vocabulary: single characters, multi-character pieces, pieces cutting UTF-8 characters in
// half, an end token and a control token.
std::shared_ptr<const TokenTable> toy_table() {
    std::vector<std::string> pieces = {"</s>", "<ctl>", "a", "b", "c", "ab", "abc", "ba", "{", "}", "{\"", "\":", " ",
                                       "  ", "\n", "\"", "1", "12", "-", "é", "\xc3", "\xa9", "\xc3\xa9\xc3", "😀",
                                       "\xf0\x9f", "\x98\x80", "x", "xyz", ",", "\"a"};
    std::vector<TokenTable::Kind> kinds(pieces.size(), TokenTable::Kind::Text);
    kinds[0] = TokenTable::Kind::End;
    kinds[1] = TokenTable::Kind::Special;
    return std::make_shared<TokenTable>(std::move(pieces), std::move(kinds));
}

}  // namespace

TEST_CASE("the trie walk's mask equals checking each token alone, state after state") {
    const auto table = toy_table();
    const char* grammars[] = {
        "root ::= [a-c]+ | \"{\" ws \"\\\"\" [a-z]* \"\\\":\" ws [0-9-]+ ws \"}\"\nws ::= [ \\n]*",
        "root ::= ([a-cé] | \"😀\")* \"x\"",
        "root ::= \"é\"{2} \"ab\"?",
    };
    Rng rng(5);
    for (const char* text : grammars) {
        CAPTURE(text);
        GrammarMatcher m(Grammar::parse(text), table);
        for (int step = 0; step < 200; ++step) {
            const std::vector<uint64_t> mask = m.allowed_tokens();
            std::vector<TokenId> allowed;
            for (TokenId id = 0; id < TokenId(table->size()); ++id) {
                const bool bit = (mask[size_t(id) >> 6] >> (id & 63)) & 1;
                CHECK(bit == m.allows(id));
                if (bit) allowed.push_back(id);
            }
            CHECK_FALSE(((mask[0] >> 1) & 1));                // the control token never
            CHECK(((mask[0] & 1) != 0) == m.can_end());       // the end token exactly when complete
            if (allowed.empty() || (allowed.size() == 1 && allowed[0] == 0)) {
                m.reset();
                continue;
            }
            TokenId next = 0;
            while (next == 0) next = allowed[rng.next() % allowed.size()];
            m.accept(next);
        }
    }
    GrammarMatcher m(Grammar::parse("root ::= \"ab\""), table);
    CHECK_THROWS_WITH_AS(m.accept(4), "the grammar does not allow token 4 here", vkllm::Error);
}
