#pragma once
// Internal to vkllm_tokenizer: the lookups every tokenizer session needs, and the sessions
// themselves (one file each: spm.cpp, bpe.cpp, wpm.cpp).
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "tokenizer/pretokenize.h"
#include "tokenizer/vocab.h"

namespace vkllm::tokenizer {

struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view text) const { return std::hash<std::string_view>{}(text); }
};

// Token text -> id, and merge (left, right) -> rank, in open-addressing tables: tokenizing
// looks these up once or twice per character, so one cache line per probe matters.
class TokenLookup {
public:
    explicit TokenLookup(const Vocab& vocab);  // throws on a duplicate token text

    TokenId find(std::string_view text) const;
    // Rank of the merge "left right", or -1.
    int merge_rank(std::string_view left, std::string_view right) const;
    // The token for one raw byte: SPM "<0xXX>" (else the byte itself), BPE the byte's alphabet
    // character. no_token when the vocabulary has neither.
    TokenId byte_token(uint8_t byte) const;
    size_t max_token_length() const { return max_length_; }
    // Whether this UTF-8 character occurs in some token of two or more characters. One that does
    // not can never merge with a neighbour, so SPM may tokenize the text on each side of it apart.
    bool joins(std::string_view character) const { return joinable_.count(character) > 0; }

private:
    struct TextSlot {
        uint64_t hash = 0;
        TokenId id = no_token;
    };
    struct PairSlot {
        uint64_t key = ~uint64_t(0);  // left id << 32 | right id; all ones: empty
        int rank = -1;
    };

    const Vocab& vocab_;
    std::vector<TextSlot> texts_;  // capacity a power of two, at most half full
    std::vector<PairSlot> pairs_;
    // Merges whose halves are not both tokens (none in well-formed vocabularies): "left\x1Fright".
    std::unordered_map<std::string, int, StringHash, std::equal_to<>> other_merges_;
    std::unordered_set<std::string_view, StringHash, std::equal_to<>> joinable_;
    size_t max_length_ = 0;
};

void tokenize_spm(const TokenLookup& lookup, const Vocab& vocab, std::string_view text,
                  std::vector<TokenId>& out);
void tokenize_bpe(const TokenLookup& lookup, const Vocab& vocab, const PreTokenizer& pre,
                  std::string_view text, std::vector<TokenId>& out);
void tokenize_wpm(const TokenLookup& lookup, const Vocab& vocab, std::string_view text,
                  std::vector<TokenId>& out);

}  // namespace vkllm::tokenizer
