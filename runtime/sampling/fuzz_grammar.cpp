// libFuzzer entry for the GBNF parser and the grammar matcher (built with -DVKLLM_FUZZ=ON and clang;
// run by scripts/fuzz). The input is a grammar, optionally followed by a NUL byte and text (up to 256
// bytes of it): the grammar must parse or throw vkllm::Error (its parse-time limits: ways open at
// once, expansions before a character, a root that never finishes); a parsed one then takes the text
// byte by byte and masks a small vocabulary at each step, where a ConstraintError (too ambiguous, as
// only generation shows) is the only exception allowed.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/error.h"
#include "sampling/grammar_matcher.h"

using namespace vkllm::sampling;

namespace {

std::shared_ptr<const TokenTable> vocabulary() {
    static const auto table = [] {
        std::vector<std::string> pieces = {"</s>", "<ctl>", "a", "ab", "{\"", "\":", " ", "\n", "0", "12", "é", "\xc3", "\xa9",
                                           "😀", "\xf0\x9f", "\x98\x80", "\"", "}", "]", "[", ",", "\\", "x", "-"};
        std::vector<TokenTable::Kind> kinds(pieces.size(), TokenTable::Kind::Text);
        kinds[0] = TokenTable::Kind::End;
        kinds[1] = TokenTable::Kind::Special;
        return std::make_shared<TokenTable>(std::move(pieces), std::move(kinds));
    }();
    return table;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view input(reinterpret_cast<const char*>(data), size);
    const size_t split = input.find('\0');
    std::shared_ptr<const Grammar> grammar;
    try {
        grammar = Grammar::parse(input.substr(0, split));
    } catch (const vkllm::Error&) {
        return 0;
    }
    const std::string_view text = split == std::string_view::npos ? std::string_view() : input.substr(split + 1, 256);
    try {
        // Small limits keep an ambiguous grammar's input quick; the defaults are the same checks, later.
        GrammarMatcher matcher(grammar, vocabulary(), {.stacks = 256, .step_work = 4096, .call_work = 1u << 16});
        for (char byte : text) {
            const std::vector<uint64_t>& mask = matcher.allowed_tokens();
            for (TokenId id = 0; id < TokenId(vocabulary()->size()); ++id)
                if (((mask[0] >> id) & 1) != matcher.allows(id)) __builtin_trap();  // the trie walk and single checks disagree
            if (!matcher.accept_text(std::string_view(&byte, 1))) break;
        }
        (void)matcher.can_end();
    } catch (const ConstraintError&) {
    }
    return 0;
}
