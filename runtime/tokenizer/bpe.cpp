// Byte-level BPE as llama.cpp's `llm_tokenizer_bpe_session` runs it (model-notes.md F.4).
#include <queue>

#include "tokenizer/sessions.h"
#include "tokenizer/unicode.h"

namespace vkllm::tokenizer {

namespace {

struct Symbol {
    int prev, next;
    size_t offset, length;  // bytes of the word; length 0 once merged into the left neighbour
};

struct Bigram {
    int left, right;
    int rank;
    size_t length;
    // Lowest rank first; on equal ranks the leftmost pair.
    bool operator<(const Bigram& other) const {
        return rank > other.rank || (rank == other.rank && left > other.left);
    }
};

class BpeWord {
public:
    BpeWord(const TokenLookup& lookup, std::string_view word) : lookup_(lookup), word_(word) {}

    void run(bool whole, std::vector<TokenId>& out) {
        if (whole) {
            symbols_.push_back({-1, -1, 0, word_.size()});
        } else {
            for (size_t offset = 0; offset < word_.size();) {
                const size_t length = std::min(utf8_length(uint8_t(word_[offset])), word_.size() - offset);
                const int index = int(symbols_.size());
                symbols_.push_back({index - 1, offset + length == word_.size() ? -1 : index + 1, offset, length});
                offset += length;
            }
        }
        for (int i = 1; i < int(symbols_.size()); ++i) add_bigram(i - 1, i);
        while (!queue_.empty()) {
            const Bigram bigram = queue_.top();
            queue_.pop();
            Symbol& left = symbols_[size_t(bigram.left)];
            Symbol& right = symbols_[size_t(bigram.right)];
            if (left.length == 0 || right.length == 0 || left.length + right.length != bigram.length) continue;
            left.length += right.length;
            right.length = 0;
            left.next = right.next;
            if (right.next >= 0) symbols_[size_t(right.next)].prev = bigram.left;
            add_bigram(left.prev, bigram.left);
            add_bigram(bigram.left, left.next);
        }
        for (const Symbol& symbol : symbols_)
            if (symbol.length > 0) emit(word_.substr(symbol.offset, symbol.length), out);
    }

private:
    void add_bigram(int left, int right) {
        if (left == -1 || right == -1) return;
        const Symbol& l = symbols_[size_t(left)];
        const Symbol& r = symbols_[size_t(right)];
        const int rank = lookup_.merge_rank(word_.substr(l.offset, l.length), word_.substr(r.offset, r.length));
        if (rank < 0) return;
        queue_.push({left, right, rank, l.length + r.length});
    }

    // A symbol that is no token falls back to its single bytes, each kept only when that one
    // byte is itself a token (llama.cpp drops the others).
    void emit(std::string_view text, std::vector<TokenId>& out) const {
        if (TokenId id = lookup_.find(text); id != no_token) {
            out.push_back(id);
            return;
        }
        for (char byte : text)
            if (TokenId id = lookup_.find(std::string_view(&byte, 1)); id != no_token) out.push_back(id);
    }

    const TokenLookup& lookup_;
    std::string_view word_;
    std::vector<Symbol> symbols_;
    std::priority_queue<Bigram> queue_;
};

}  // namespace

void tokenize_bpe(const TokenLookup& lookup, const Vocab& vocab, const PreTokenizer& pre, std::string_view text,
                  std::vector<TokenId>& out) {
    for (const std::string& word : pre.split(text)) {
        const bool whole = vocab.ignore_merges && lookup.find(word) != no_token;
        BpeWord(lookup, word).run(whole, out);
    }
}

}  // namespace vkllm::tokenizer
