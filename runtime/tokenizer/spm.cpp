// SentencePiece-BPE as llama.cpp's `llm_tokenizer_spm_session` runs it (model-notes.md F.3).
#include <queue>

#include "core/error.h"
#include "tokenizer/sessions.h"
#include "tokenizer/unicode.h"

namespace vkllm::tokenizer {

namespace {

struct Symbol {
    int prev, next;
    size_t offset, length;  // bytes of the text; length 0 once merged into the left neighbour
};

struct Bigram {
    int left, right;
    float score;
    size_t length;
    // Highest score first; on equal scores the leftmost pair.
    bool operator<(const Bigram& other) const {
        return score < other.score || (score == other.score && left > other.left);
    }
};

class SpmSession {
public:
    SpmSession(const TokenLookup& lookup, const Vocab& vocab, std::string_view text)
        : lookup_(lookup), vocab_(vocab), text_(text) {}

    void run(std::vector<TokenId>& out) {
        for (size_t offset = 0; offset < text_.size();) {
            const size_t length = std::min(utf8_length(uint8_t(text_[offset])), text_.size() - offset);
            const int index = int(symbols_.size());
            symbols_.push_back({index - 1, offset + length == text_.size() ? -1 : index + 1, offset, length});
            offset += length;
        }
        for (int i = 1; i < int(symbols_.size()); ++i) try_add_bigram(i - 1, i);
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
            try_add_bigram(left.prev, bigram.left);
            try_add_bigram(bigram.left, left.next);
        }
        for (int i = symbols_.empty() ? -1 : 0; i != -1; i = symbols_[size_t(i)].next) emit(symbols_[size_t(i)], out);
    }

private:
    std::string_view text_of(const Symbol& symbol) const { return text_.substr(symbol.offset, symbol.length); }

    void try_add_bigram(int left, int right) {
        if (left == -1 || right == -1) return;
        const Symbol& l = symbols_[size_t(left)];
        const Symbol& r = symbols_[size_t(right)];
        const TokenId id = lookup_.find(text_.substr(l.offset, l.length + r.length));
        if (id == no_token) return;
        queue_.push({left, right, vocab_.scores[size_t(id)], l.length + r.length});
    }

    // Every merged symbol is a token; a single character that is not falls back to byte tokens.
    void emit(const Symbol& symbol, std::vector<TokenId>& out) const {
        const std::string_view text = text_of(symbol);
        if (TokenId id = lookup_.find(text); id != no_token) {
            out.push_back(id);
            return;
        }
        for (char byte : text) {
            TokenId id = lookup_.byte_token(uint8_t(byte));
            if (id == no_token) id = vocab_.unk;
            if (id == no_token)
                fail("tokenizer: byte 0x{:02x} has no token and the vocabulary has no unknown token", uint8_t(byte));
            out.push_back(id);
        }
    }

    const TokenLookup& lookup_;
    const Vocab& vocab_;
    std::string_view text_;
    std::vector<Symbol> symbols_;
    std::priority_queue<Bigram> queue_;
};

}  // namespace

// One session per stretch between characters that no token joins ('\n' in most vocabularies):
// the same result as one session over the whole text, with a far smaller queue.
void tokenize_spm(const TokenLookup& lookup, const Vocab& vocab, std::string_view text, std::vector<TokenId>& out) {
    size_t start = 0;
    for (size_t at = 0; at < text.size();) {
        const size_t length = std::min(utf8_length(uint8_t(text[at])), text.size() - at);
        if (!lookup.joins(text.substr(at, length))) {
            if (at > start) SpmSession(lookup, vocab, text.substr(start, at - start)).run(out);
            SpmSession(lookup, vocab, text.substr(at, length)).run(out);
            start = at + length;
        }
        at += length;
    }
    if (start < text.size()) SpmSession(lookup, vocab, text.substr(start)).run(out);
}

}  // namespace vkllm::tokenizer
