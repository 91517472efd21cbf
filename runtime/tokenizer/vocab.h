#pragma once
// A tokenizer vocabulary as llama.cpp holds it after `llama_vocab::impl::load` (model-notes.md F.1):
// token texts, scores, attributes, BPE merges, special ids and the add/clean flags, with every
// model- and pre-type default already applied. Built from GGUF metadata or from tekken.json.
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace vkllm::gguf {
class File;
}

namespace vkllm::tokenizer {

using TokenId = int32_t;
constexpr TokenId no_token = -1;

enum class Model { Spm, Bpe, Wpm };  // tokenizer.ggml.model "llama", "gpt2", "bert"

// tokenizer.ggml.token_type values (llama.h `llama_token_type`).
enum class TokenType : int32_t { Undefined = 0, Normal = 1, Unknown = 2, Control = 3, UserDefined = 4, Unused = 5, Byte = 6 };

// Attribute bits (llama.h `llama_token_attr`); auto-detection may add Control or Unused to a type.
enum TokenAttr : uint32_t {
    attr_undefined = 0,
    attr_unknown = 1u << 0,
    attr_unused = 1u << 1,
    attr_normal = 1u << 2,
    attr_control = 1u << 3,
    attr_user_defined = 1u << 4,
    attr_byte = 1u << 5,
};
uint32_t attr_of(TokenType type);

struct Vocab {
    Model model = Model::Spm;
    std::string pre;                  // tokenizer.ggml.pre ("default" when a BPE file has none)
    std::vector<std::string> tokens;  // empty texts already replaced by "[EMPTY_i]"
    std::vector<float> scores;        // one per token (0 when the file has none)
    std::vector<TokenType> types;     // as stored (tokenizer.ggml.token_type), one per token
    std::vector<uint32_t> attrs;      // TokenAttr bits, one per token: the types plus detection
    std::vector<std::string> merges;  // BPE "left right"; the rank is the index

    TokenId bos = no_token, eos = no_token, eot = no_token, eom = no_token, unk = no_token,
            sep = no_token, pad = no_token, mask = no_token;
    std::vector<TokenId> eog;  // ids that end generation, ascending

    bool add_bos = false, add_eos = false, add_sep = false;
    bool add_space_prefix = false;  // SPM: prefix raw text that follows a special piece with ' '
    bool clean_spaces = false;      // detokenize drops the space before ? ! . , and similar
    bool ignore_merges = false;     // BPE: a word that is a token is emitted whole
    bool lowercase = false, strip_accents = false;  // WordPiece normalizer

    std::string chat_template;  // tokenizer.chat_template ("" when absent)

    size_t size() const { return tokens.size(); }
    bool has(TokenId id) const { return id >= 0 && size_t(id) < tokens.size(); }
};

// A vocabulary with llama.cpp's defaults for the model and BPE pre-type (ids, add_*, flags).
// Throws naming the pre-type when it is unknown.
Vocab default_vocab(Model model, std::string_view pre);

// The last step of loading, shared by every source: EOT/EOG detection by token text, control
// tokens named "unused" marked unused, eos/eot/eom added to the EOG set.
void detect_special_tokens(Vocab& vocab);

// Reads tokenizer.ggml.* and tokenizer.chat_template. Throws a vkllm::Error naming the file and key
// for a missing or mistyped key, an unknown model or pre-type, or an id outside the vocabulary.
Vocab from_gguf(const gguf::File& file);

// A model's vocabulary from a GGUF file, or from a tekken.json (by the ".json" extension).
Vocab load_vocab(const std::filesystem::path& path);

}  // namespace vkllm::tokenizer
