#include "tokenizer/tokenizer.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "core/error.h"
#include "tokenizer/sessions.h"
#include "tokenizer/unicode.h"

namespace vkllm::tokenizer {

namespace {

constexpr std::string_view escaped_space = "\xE2\x96\x81";  // U+2581, SPM's visible space

// The special tokens (control, user-defined, unknown) in a byte trie, to find in one pass which
// of them occur in a text at all before splitting in llama.cpp's longest-token-first order.
class SpecialTrie {
public:
    void insert(std::string_view text, TokenId id) {
        uint32_t node = 0;
        for (char c : text) {
            auto& children = nodes_[node].children;
            auto it = std::find_if(children.begin(), children.end(),
                                   [&](const auto& child) { return child.first == uint8_t(c); });
            if (it == children.end()) {
                children.emplace_back(uint8_t(c), uint32_t(nodes_.size()));
                node = uint32_t(nodes_.size());
                nodes_.emplace_back();
            } else {
                node = it->second;
            }
        }
        nodes_[node].id = id;
    }

    void mark_occurring(std::string_view text, std::vector<bool>& found) const {
        for (size_t start = 0; start < text.size(); ++start) {
            uint32_t node = 0;
            for (size_t i = start; i < text.size(); ++i) {
                const auto& children = nodes_[node].children;
                auto it = std::find_if(children.begin(), children.end(),
                                       [&](const auto& child) { return child.first == uint8_t(text[i]); });
                if (it == children.end()) break;
                node = it->second;
                if (nodes_[node].id != no_token) found[size_t(nodes_[node].id)] = true;
            }
        }
    }

private:
    struct Node {
        std::vector<std::pair<uint8_t, uint32_t>> children;
        TokenId id = no_token;
    };
    std::vector<Node> nodes_ = std::vector<Node>(1);
};

// A piece of the input: raw text still to tokenize, or a special token already found.
struct Fragment {
    TokenId token = no_token;
    size_t offset = 0, length = 0;
};

}  // namespace

struct Tokenizer::Impl {
    Vocab vocab;
    TokenLookup lookup{vocab};
    std::optional<PreTokenizer> pre;
    std::vector<TokenId> specials;  // longest text first, as llama.cpp's cache_special_tokens
    SpecialTrie special_trie;

    explicit Impl(Vocab v) : vocab(std::move(v)) {
        if (vocab.model == Model::Bpe) pre.emplace(vocab.pre);
        for (TokenId id = 0; id < TokenId(vocab.size()); ++id) {
            if (vocab.attrs[size_t(id)] & (attr_control | attr_user_defined | attr_unknown)) {
                specials.push_back(id);
                special_trie.insert(vocab.tokens[size_t(id)], id);
            }
        }
        std::stable_sort(specials.begin(), specials.end(), [&](TokenId a, TokenId b) {
            return vocab.tokens[size_t(a)].size() > vocab.tokens[size_t(b)].size();
        });
    }

    std::vector<Fragment> partition(std::string_view text, bool parse_special) const;
    void split_at(std::string_view text, TokenId id, std::vector<Fragment>& fragments) const;
};

// llama.cpp's `tokenizer_st_partition`: each special token in turn, longest first, splits every
// raw fragment at all its occurrences. Control and unknown tokens only take part when parsing
// specials; user-defined ones always do.
std::vector<Fragment> Tokenizer::Impl::partition(std::string_view text, bool parse_special) const {
    std::vector<Fragment> fragments;
    if (text.empty()) return fragments;
    fragments.push_back({no_token, 0, text.size()});
    std::vector<bool> occurs(vocab.size(), false);
    special_trie.mark_occurring(text, occurs);
    for (TokenId id : specials) {
        if (!occurs[size_t(id)]) continue;
        if (!parse_special && (vocab.attrs[size_t(id)] & (attr_control | attr_unknown))) continue;
        split_at(text, id, fragments);
    }
    return fragments;
}

void Tokenizer::Impl::split_at(std::string_view text, TokenId id, std::vector<Fragment>& fragments) const {
    const std::string& special = vocab.tokens[size_t(id)];
    std::vector<Fragment> out;
    out.reserve(fragments.size());
    for (const Fragment& fragment : fragments) {
        if (fragment.token != no_token) {
            out.push_back(fragment);
            continue;
        }
        const std::string_view raw = text.substr(0, fragment.offset + fragment.length);
        size_t at = fragment.offset;
        for (size_t match; (match = raw.find(special, at)) != std::string_view::npos;) {
            if (match > at) out.push_back({no_token, at, match - at});
            out.push_back({id, match, special.size()});
            at = match + special.size();
        }
        if (at < raw.size()) out.push_back({no_token, at, raw.size() - at});
    }
    fragments = std::move(out);
}

Tokenizer::Tokenizer(Vocab vocab) : impl_(std::make_unique<Impl>(std::move(vocab))) {}
Tokenizer::~Tokenizer() = default;
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;

const Vocab& Tokenizer::vocab() const { return impl_->vocab; }

TokenId Tokenizer::find(std::string_view text) const { return impl_->lookup.find(text); }

bool Tokenizer::is_eog(TokenId id) const {
    return std::binary_search(impl_->vocab.eog.begin(), impl_->vocab.eog.end(), id);
}

std::vector<TokenId> Tokenizer::tokenize(std::string_view text, bool add_special, bool parse_special) const {
    const Vocab& vocab = impl_->vocab;
    std::vector<TokenId> out;
    // WordPiece always frames the text with BOS ([CLS]) and SEP, as llama.cpp does.
    const bool bos = add_special && (vocab.add_bos || vocab.model == Model::Wpm);
    if (bos && vocab.bos != no_token) out.push_back(vocab.bos);
    bool previous_special = true;  // SPM prefixes the first raw piece with a space too
    for (const Fragment& fragment : impl_->partition(text, parse_special)) {
        if (fragment.token != no_token) {
            out.push_back(fragment.token);
            previous_special = true;
            continue;
        }
        const std::string_view raw = text.substr(fragment.offset, fragment.length);
        switch (vocab.model) {
            case Model::Spm: {
                std::string spaced = vocab.add_space_prefix && previous_special ? " " : "";
                spaced += raw;
                tokenize_spm(impl_->lookup, vocab, replace_all(spaced, " ", escaped_space), out);
                break;
            }
            case Model::Bpe: tokenize_bpe(impl_->lookup, vocab, *impl_->pre, raw, out); break;
            case Model::Wpm: tokenize_wpm(impl_->lookup, vocab, raw, out); break;
        }
        previous_special = false;
    }
    if (add_special && vocab.model == Model::Wpm && vocab.sep != no_token) out.push_back(vocab.sep);
    else if (add_special && vocab.model != Model::Wpm && vocab.add_eos) out.push_back(vocab.eos);
    return out;
}

std::string Tokenizer::token_to_piece(TokenId id, bool special) const {
    const Vocab& vocab = impl_->vocab;
    if (!vocab.has(id)) fail("token id {} is outside the vocabulary of {} tokens", id, vocab.size());
    const uint32_t attr = vocab.attrs[size_t(id)];
    const std::string& text = vocab.tokens[size_t(id)];
    if (attr & (attr_control | attr_unknown)) return special ? text : std::string();
    if (attr & attr_user_defined) return text;
    if (attr & attr_byte) {
        // "<0xXX>" in SPM and in BPE vocabularies that carry byte tokens.
        const unsigned long byte = text.size() == 6 ? std::strtoul(text.substr(3, 2).c_str(), nullptr, 16) : 0;
        return std::string(1, char(byte));
    }
    if (!(attr & attr_normal)) return {};
    if (vocab.model != Model::Bpe) return replace_all(text, escaped_space, " ");
    std::string bytes;
    for (char32_t cpt : decode_utf8(text)) {
        if (auto byte = unicode_to_byte(cpt)) {
            bytes += char(*byte);
        } else {
            // llama.cpp's `llama_decode_text` marks characters outside the byte alphabet.
            std::string utf8;
            append_utf8(utf8, cpt);
            bytes += "[UNK_BYTE_0x";
            for (char c : utf8) bytes += fmt::format("{:02x}", uint8_t(c));
            bytes += text + "]";
        }
    }
    return bytes;
}

namespace {

// llama.cpp's three clean-up passes of `detokenize` for vocabularies with clean_spaces.
std::string clean_spaces(std::string s) {
    if (s.size() < 2) return s;
    std::string out(1, s[0]);
    for (size_t i = 1; i < s.size(); ++i) {  // " ?", " !", " .", " ,"
        if (s[i - 1] == ' ' && (s[i] == '?' || s[i] == '!' || s[i] == '.' || s[i] == ',')) out.pop_back();
        out += s[i];
    }
    s = std::move(out);
    out.assign(1, s[0]);
    for (size_t i = 1; i < s.size(); ++i) {  // " ' " -> "'"
        const char x = s[i];
        if (x == '\'' && i + 1 < s.size() && s[i - 1] == ' ' && s[i + 1] == ' ') {
            out.pop_back();
            s[++i] = '\0';
        }
        out += x;
    }
    s = std::move(out);
    out.assign(1, s[0]);
    for (size_t i = 1; i < s.size(); ++i) {  // " 's", " 'm", " 're", " 've" lose their space
        if (s[i - 1] == ' ' && s[i] == '\'' && i + 1 < s.size()) {
            const char x1 = s[i + 1];
            const char x2 = i + 2 < s.size() ? s[i + 2] : '\0';
            const bool joins = x1 == 's' || x1 == 'm' ||
                               (x1 != 't' && x1 != 'd' && i + 2 < s.size() &&
                                ((x1 == 'r' && x2 == 'e') || (x1 == 'v' && x2 == 'e')));
            if (joins) out.pop_back();
        }
        out += s[i];
    }
    return out;
}

}  // namespace

std::string Tokenizer::detokenize(std::span<const TokenId> ids, bool remove_special, bool unparse_special) const {
    const Vocab& vocab = impl_->vocab;
    bool strip_space = vocab.add_space_prefix;
    if (remove_special && vocab.add_bos && !ids.empty() && ids.front() == vocab.bos) {
        strip_space = false;
        ids = ids.subspan(1);
    }
    if (remove_special && vocab.add_eos && !ids.empty() && ids.back() == vocab.eos) ids = ids.first(ids.size() - 1);
    std::string text;
    for (TokenId id : ids) {
        std::string piece = token_to_piece(id, unparse_special);
        if (strip_space && !piece.empty() && piece[0] == ' ') piece.erase(0, 1);
        strip_space = false;
        text += piece;
    }
    return vocab.clean_spaces ? clean_spaces(std::move(text)) : text;
}

StreamDecoder::StreamDecoder(const Tokenizer& tokenizer, bool special) : tokenizer_(&tokenizer), special_(special) {}

std::string StreamDecoder::push(TokenId id) {
    pending_ += tokenizer_->token_to_piece(id, special_);
    const size_t ready = complete_utf8_prefix(pending_);
    std::string out = valid_utf8(std::string_view(pending_).substr(0, ready));
    pending_.erase(0, ready);
    return out;
}

std::string StreamDecoder::finish() { return valid_utf8(std::exchange(pending_, {})); }

}  // namespace vkllm::tokenizer
