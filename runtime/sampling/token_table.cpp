#include "sampling/token_table.h"

#include <algorithm>

#include "core/error.h"

namespace vkllm::sampling {

TokenTable::TokenTable(std::vector<std::string> pieces, std::vector<Kind> kinds) : kinds_(std::move(kinds)) {
    if (pieces.size() != kinds_.size())
        fail("token table: {} pieces for {} kinds; each token needs one of each", pieces.size(), kinds_.size());
    offsets_.reserve(pieces.size() + 1);
    offsets_.push_back(0);
    for (size_t id = 0; id < pieces.size(); ++id) {
        bytes_ += pieces[id];
        offsets_.push_back(uint32_t(bytes_.size()));
        if (kinds_[id] == Kind::Text && pieces[id].empty()) kinds_[id] = Kind::Special;  // it would match forever
        if (kinds_[id] == Kind::End) end_tokens_.push_back(TokenId(id));
        max_piece_bytes_ = std::max(max_piece_bytes_, pieces[id].size());
    }
    build_trie();
}

// Breadth first over the text tokens sorted by piece: a node's tokens are those whose piece ends at
// its depth (they sort first in its range), and its children split the rest by their next byte, so
// each node's children are created together and lie contiguous.
void TokenTable::build_trie() {
    for (size_t id = 0; id < kinds_.size(); ++id)
        if (kinds_[id] == Kind::Text) trie_tokens_.push_back(TokenId(id));
    std::ranges::sort(trie_tokens_, [this](TokenId a, TokenId b) { return piece(a) < piece(b) || (piece(a) == piece(b) && a < b); });
    struct Pending {
        uint32_t node, begin, end, depth;
    };
    std::vector<Pending> queue = {{0, 0, uint32_t(trie_tokens_.size()), 0}};
    trie_.push_back({});
    for (size_t next = 0; next < queue.size(); ++next) {
        const Pending at = queue[next];
        uint32_t i = at.begin;
        while (i < at.end && piece(trie_tokens_[i]).size() == at.depth) ++i;
        trie_[at.node].first_token = at.begin;
        trie_[at.node].n_tokens = i - at.begin;
        trie_[at.node].first_child = uint32_t(trie_.size());
        while (i < at.end) {
            const uint8_t byte = uint8_t(piece(trie_tokens_[i])[at.depth]);
            uint32_t j = i;
            while (j < at.end && uint8_t(piece(trie_tokens_[j])[at.depth]) == byte) ++j;
            queue.push_back({uint32_t(trie_.size()), i, j, at.depth + 1});
            trie_.push_back({.byte = byte});
            i = j;
        }
        trie_[at.node].n_children = uint32_t(trie_.size()) - trie_[at.node].first_child;
    }
}

}  // namespace vkllm::sampling
