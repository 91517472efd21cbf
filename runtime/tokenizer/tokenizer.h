#pragma once
// Text <-> token ids exactly as llama.cpp's `llama_vocab` does it (model-notes.md F.2-F.4):
// special tokens split out first, then SPM, byte-level BPE or WordPiece on the raw pieces.
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/vocab.h"

namespace vkllm::tokenizer {

class Tokenizer {
public:
    // Throws a vkllm::Error for a duplicate token text or an unknown pre-tokenizer.
    explicit Tokenizer(Vocab vocab);
    ~Tokenizer();
    Tokenizer(Tokenizer&&) noexcept;
    Tokenizer& operator=(Tokenizer&&) noexcept;

    const Vocab& vocab() const;

    // add_special: BOS/EOS/SEP as the vocabulary asks. parse_special: control tokens written in
    // the text ("<start_of_turn>", "[INST]") become their ids; user-defined tokens always do.
    std::vector<TokenId> tokenize(std::string_view text, bool add_special, bool parse_special) const;

    // The bytes a token stands for; control and unknown tokens only when `special`.
    // Throws naming the id when it is outside the vocabulary.
    std::string token_to_piece(TokenId id, bool special) const;

    // remove_special drops a leading BOS / trailing EOS the vocabulary adds; unparse_special
    // renders control tokens as text. Applies the SPM leading-space and clean_spaces rules.
    std::string detokenize(std::span<const TokenId> ids, bool remove_special, bool unparse_special) const;

    TokenId find(std::string_view text) const;  // no_token when the text is not a token
    bool is_eog(TokenId id) const;

    struct Impl;

private:
    std::unique_ptr<Impl> impl_;
};

// Turns a stream of ids into text that is always well-formed UTF-8: bytes of a character split
// across tokens are held back until the character is complete, and bytes no character can be made
// of (byte-fallback tokens of random or broken output) become U+FFFD, as does an incomplete tail
// at finish(). What it returns is valid_utf8 of the pieces' bytes, split where the tokens allow.
class StreamDecoder {
public:
    explicit StreamDecoder(const Tokenizer& tokenizer, bool special = false);
    std::string push(TokenId id);
    std::string finish();

private:
    const Tokenizer* tokenizer_;
    bool special_;
    std::string pending_;
};

}  // namespace vkllm::tokenizer
