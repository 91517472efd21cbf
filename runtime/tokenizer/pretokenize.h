#pragma once
// The regex pre-tokenizer of byte-level BPE (model-notes.md F.4), reproducing llama.cpp's
// `unicode_regex_split`: the pre-type's regexes run one after another, each one splitting the
// pieces the previous one left (unmatched stretches stay pieces of their own).
//
// Like llama.cpp, a regex using \p{N}, \p{L}, \p{P}, \p{M} or \p{S} runs on a "collapsed" copy of
// the text where every non-ASCII codepoint becomes one marker unit for its class (non-ASCII
// whitespace becomes \v). ASCII keeps llama.cpp's hand-written class ranges, so for instance
// '~' is neither \p{P} nor \p{S}, and case tests in the tekken regex are ASCII-only (F.4).
// Regexes without categories run on the codepoints themselves. PCRE2 (32-bit units) matches.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace vkllm::tokenizer {

class PreTokenizer {
public:
    // `pre` is tokenizer.ggml.pre; throws naming it when llama.cpp would not know it either.
    explicit PreTokenizer(std::string_view pre);
    ~PreTokenizer();
    PreTokenizer(PreTokenizer&&) noexcept;
    PreTokenizer& operator=(PreTokenizer&&) noexcept;

    // Words of `text`, each re-encoded byte by byte into the GPT-2 alphabet (unicode.h).
    std::vector<std::string> split(std::string_view text) const;

    // The raw regexes of a pre-type, in application order (empty when unknown).
    static std::vector<std::string_view> regexes_for(std::string_view pre);

private:
    struct Regex;
    std::vector<std::unique_ptr<Regex>> regexes_;
    bool needs_collapsed_ = false;
};

}  // namespace vkllm::tokenizer
