#pragma once
// Internal to vkllm_tokenizer: the lookups every tokenizer session needs, and the sessions
// themselves (one file each: spm.cpp, bpe.cpp, wpm.cpp).
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/pretokenize.h"
#include "tokenizer/vocab.h"

namespace vkllm::tokenizer {

struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view text) const { return std::hash<std::string_view>{}(text); }
};

class TokenLookup {
public:
    explicit TokenLookup(const Vocab& vocab);  // throws on a duplicate token text

    TokenId find(std::string_view text) const {
        auto it = ids_.find(text);
        return it == ids_.end() ? no_token : it->second;
    }
    // Rank of the merge "left right", or -1.
    int merge_rank(std::string_view left, std::string_view right) const;
    // The token for one raw byte: SPM "<0xXX>" (else the byte itself), BPE the byte's alphabet
    // character. no_token when the vocabulary has neither.
    TokenId byte_token(uint8_t byte) const;
    size_t max_token_length() const { return max_length_; }

private:
    const Vocab& vocab_;
    std::unordered_map<std::string_view, TokenId, StringHash, std::equal_to<>> ids_;
    std::unordered_map<std::string, int, StringHash, std::equal_to<>> merge_ranks_;  // "left\x1Fright"
    size_t max_length_ = 0;
};

void tokenize_spm(const TokenLookup& lookup, const Vocab& vocab, std::string_view text,
                  std::vector<TokenId>& out);
void tokenize_bpe(const TokenLookup& lookup, const Vocab& vocab, const PreTokenizer& pre,
                  std::string_view text, std::vector<TokenId>& out);
void tokenize_wpm(const TokenLookup& lookup, const Vocab& vocab, std::string_view text,
                  std::vector<TokenId>& out);

}  // namespace vkllm::tokenizer
