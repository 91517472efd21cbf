#pragma once
// The vocabulary as a grammar sees it: each token's bytes and whether it is text, an end of
// generation, or special (a control token: never text). A byte trie over the text tokens' pieces
// lets one walk decide the whole vocabulary: a prefix the grammar refuses prunes every token below
// it. Built once per tokenizer (vocab_table.h), shared by every sampler, immutable.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace vkllm::sampling {

using TokenId = int32_t;

class TokenTable {
public:
    enum class Kind : uint8_t {
        Text,     // matches grammar text by its bytes
        End,      // ends generation: allowed exactly when the grammar is complete
        Special,  // never allowed under a grammar (also text tokens with no bytes)
    };

    // One piece and kind per token id.
    TokenTable(std::vector<std::string> pieces, std::vector<Kind> kinds);

    size_t size() const { return kinds_.size(); }
    Kind kind(TokenId id) const { return kinds_[size_t(id)]; }
    std::string_view piece(TokenId id) const {
        return std::string_view(bytes_).substr(offsets_[size_t(id)], offsets_[size_t(id) + 1] - offsets_[size_t(id)]);
    }
    std::span<const TokenId> end_tokens() const { return end_tokens_; }
    size_t max_piece_bytes() const { return max_piece_bytes_; }

    struct TrieNode {
        uint32_t first_child;  // children are contiguous, in byte order
        uint32_t n_children;
        uint32_t first_token;  // tokens whose piece ends here: trie_tokens()[first_token, + n_tokens)
        uint32_t n_tokens;
        uint8_t byte;          // the byte on the edge from the parent
    };
    std::span<const TrieNode> trie() const { return trie_; }  // node 0: the empty prefix
    std::span<const TokenId> trie_tokens() const { return trie_tokens_; }

private:
    void build_trie();

    std::string bytes_;
    std::vector<uint32_t> offsets_;
    std::vector<Kind> kinds_;
    std::vector<TokenId> end_tokens_;
    std::vector<TrieNode> trie_;
    std::vector<TokenId> trie_tokens_;  // text tokens sorted by piece
    size_t max_piece_bytes_ = 0;
};

}  // namespace vkllm::sampling
