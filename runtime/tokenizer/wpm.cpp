// WordPiece (BERT) as llama.cpp's `llm_tokenizer_wpm_session` runs it: BERT-style normalisation
// and splitting, then greedy longest-match per word with a leading "▁" standing for the word start.
#include "tokenizer/sessions.h"
#include "tokenizer/unicode.h"

namespace vkllm::tokenizer {

namespace {

// The CJK ranges of HF's BertPreTokenizer (including its 0x2B920 start of extension E).
bool is_chinese(char32_t cpt) {
    return (cpt >= 0x4E00 && cpt <= 0x9FFF) || (cpt >= 0x3400 && cpt <= 0x4DBF) ||
           (cpt >= 0x20000 && cpt <= 0x2A6DF) || (cpt >= 0x2A700 && cpt <= 0x2B73F) ||
           (cpt >= 0x2B740 && cpt <= 0x2B81F) || (cpt >= 0x2B920 && cpt <= 0x2CEAF) ||
           (cpt >= 0xF900 && cpt <= 0xFAFF) || (cpt >= 0x2F800 && cpt <= 0x2FA1F);
}

// Whitespace separates words; punctuation, ASCII symbols and CJK characters are words of their
// own; control characters vanish; with strip_accents, so do combining marks (after NFD).
std::vector<std::string> bert_words(const Vocab& vocab, std::string_view text) {
    std::vector<char32_t> cpts = decode_utf8(text);
    if (vocab.strip_accents) cpts = nfd(cpts);
    std::vector<std::string> words(1);
    for (char32_t cpt : cpts) {
        const CharClass cls = char_class(cpt);
        if (is_whitespace(cpt)) {
            if (!words.back().empty()) words.emplace_back();
            continue;
        }
        if (cpt == 0 || cpt == 0xFFFD || cls == CharClass::Control) continue;
        if (vocab.strip_accents && cls == CharClass::Mark) continue;
        std::string utf8;
        append_utf8(utf8, vocab.lowercase ? to_lower(cpt) : cpt);
        if (cls == CharClass::Punctuation || (cpt < 0x7F && cls == CharClass::Symbol) || is_chinese(cpt)) {
            if (!words.back().empty()) words.emplace_back();
            words.back() = std::move(utf8);
            words.emplace_back();
        } else {
            words.back() += utf8;
        }
    }
    if (words.back().empty()) words.pop_back();
    return words;
}

}  // namespace

void tokenize_wpm(const TokenLookup& lookup, const Vocab& vocab, std::string_view text, std::vector<TokenId>& out) {
    for (const std::string& word : bert_words(vocab, text)) {
        if (word.empty()) continue;
        const std::string marked = "\xE2\x96\x81" + word;
        const size_t n = marked.size();
        const size_t first = out.size();
        for (size_t i = 0; i < n;) {
            size_t end = std::min(n, i + lookup.max_token_length() + 1);
            TokenId id = no_token;
            for (; end > i; --end)
                if ((id = lookup.find(std::string_view(marked).substr(i, end - i))) != no_token) break;
            if (id == no_token) {  // one unmatched position discards the whole word
                out.resize(first);
                break;
            }
            out.push_back(id);
            i = end;
        }
        if (out.size() == first) out.push_back(vocab.unk);
    }
}

}  // namespace vkllm::tokenizer
