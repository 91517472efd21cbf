#include <algorithm>
#include <bit>

#include "core/error.h"
#include "tokenizer/sessions.h"
#include "tokenizer/unicode.h"

namespace vkllm::tokenizer {

namespace {

uint64_t mix(uint64_t key) {  // splitmix64's finalizer: spreads id pairs over the table
    key = (key ^ (key >> 30)) * 0xBF58476D1CE4E5B9ull;
    key = (key ^ (key >> 27)) * 0x94D049BB133111EBull;
    return key ^ (key >> 31);
}

uint64_t hash_text(std::string_view text) { return std::hash<std::string_view>{}(text); }

size_t table_size(size_t entries) { return std::bit_ceil(std::max<size_t>(16, entries * 2)); }

std::string other_merge_key(std::string_view left, std::string_view right) {
    std::string key(left);
    key += '\x1F';
    key += right;
    return key;
}

}  // namespace

TokenLookup::TokenLookup(const Vocab& vocab) : vocab_(vocab), texts_(table_size(vocab.size())) {
    const size_t mask = texts_.size() - 1;
    for (TokenId id = 0; id < TokenId(vocab.size()); ++id) {
        const std::string& text = vocab.tokens[size_t(id)];
        const uint64_t hash = hash_text(text);
        size_t slot = hash & mask;
        for (; texts_[slot].id != no_token; slot = (slot + 1) & mask)
            if (texts_[slot].hash == hash && vocab.tokens[size_t(texts_[slot].id)] == text)
                fail("tokenizer: duplicate token '{}' has ids {} and {}", text, texts_[slot].id, id);
        texts_[slot] = {hash, id};
        max_length_ = std::max(max_length_, text.size());
        if (utf8_length(uint8_t(text[0])) < text.size()) {
            for (size_t at = 0; at < text.size();) {
                const size_t length = std::min(utf8_length(uint8_t(text[at])), text.size() - at);
                joinable_.insert(std::string_view(text).substr(at, length));
                at += length;
            }
        }
    }
    pairs_.resize(table_size(vocab.merges.size()));
    const size_t pair_mask = pairs_.size() - 1;
    for (size_t rank = 0; rank < vocab.merges.size(); ++rank) {
        const std::string_view merge = vocab.merges[rank];
        const size_t space = merge.find(' ', 1);  // a token may itself start with a space
        if (space == std::string_view::npos) continue;
        const std::string_view left = merge.substr(0, space), right = merge.substr(space + 1);
        const TokenId left_id = find(left), right_id = find(right);
        if (left_id == no_token || right_id == no_token) {
            other_merges_.try_emplace(other_merge_key(left, right), int(rank));
            continue;
        }
        const uint64_t key = uint64_t(uint32_t(left_id)) << 32 | uint32_t(right_id);
        size_t slot = mix(key) & pair_mask;
        while (pairs_[slot].key != ~uint64_t(0) && pairs_[slot].key != key) slot = (slot + 1) & pair_mask;
        if (pairs_[slot].key != key) pairs_[slot] = {key, int(rank)};  // the first listing wins
    }
}

TokenId TokenLookup::find(std::string_view text) const {
    const uint64_t hash = hash_text(text);
    const size_t mask = texts_.size() - 1;
    for (size_t slot = hash & mask; texts_[slot].id != no_token; slot = (slot + 1) & mask)
        if (texts_[slot].hash == hash && vocab_.tokens[size_t(texts_[slot].id)] == text) return texts_[slot].id;
    return no_token;
}

int TokenLookup::merge_rank(std::string_view left, std::string_view right) const {
    const TokenId left_id = find(left), right_id = find(right);
    if (left_id == no_token || right_id == no_token) {
        if (other_merges_.empty()) return -1;
        auto it = other_merges_.find(other_merge_key(left, right));
        return it == other_merges_.end() ? -1 : it->second;
    }
    const uint64_t key = uint64_t(uint32_t(left_id)) << 32 | uint32_t(right_id);
    const size_t mask = pairs_.size() - 1;
    for (size_t slot = mix(key) & mask; pairs_[slot].key != ~uint64_t(0); slot = (slot + 1) & mask)
        if (pairs_[slot].key == key) return pairs_[slot].rank;
    return -1;
}

TokenId TokenLookup::byte_token(uint8_t byte) const {
    if (vocab_.model == Model::Spm) {
        static constexpr char hex[] = "0123456789ABCDEF";
        const char name[] = {'<', '0', 'x', hex[byte >> 4], hex[byte & 15], '>'};
        if (TokenId id = find(std::string_view(name, sizeof name)); id != no_token) return id;
        return find(std::string_view(reinterpret_cast<const char*>(&byte), 1));
    }
    return find(byte_to_unicode(byte));
}

}  // namespace vkllm::tokenizer
