// Vocab from GGUF metadata, in the order llama.cpp's `llama_vocab::impl::load` reads it.
#include <algorithm>
#include <tuple>
#include <utility>

#include "core/error.h"
#include "gguf/reader.h"
#include "tokenizer/tekken.h"
#include "tokenizer/vocab.h"

namespace vkllm::tokenizer {

namespace {

Model model_named(const gguf::File& file, std::string_view name) {
    if (name == "llama") return Model::Spm;
    if (name == "gpt2") return Model::Bpe;
    if (name == "bert") return Model::Wpm;
    fail("{}: tokenizer.ggml.model '{}' is not supported (llama, gpt2 and bert are)", file.name(), name);
}

void read_tokens(const gguf::File& file, Vocab& vocab) {
    const auto tokens = file.get_string_array("tokenizer.ggml.tokens");
    if (!tokens) fail("{}: key tokenizer.ggml.tokens is missing", file.name());
    vocab.tokens.reserve(tokens->size());
    for (size_t i = 0; i < tokens->size(); ++i) {
        std::string_view text = (*tokens)[i];
        vocab.tokens.push_back(text.empty() ? "[EMPTY_" + std::to_string(i) + "]" : std::string(text));
    }
    const size_t n = vocab.tokens.size();
    vocab.scores.assign(n, 0.0f);
    // Tiktoken conversions store integer scores; llama.cpp accepts both.
    const gguf::Value* scores_value = file.find("tokenizer.ggml.scores");
    std::optional<std::vector<float>> scores;
    if (scores_value && scores_value->type == gguf::ValueType::Array && scores_value->element_type == gguf::ValueType::I32) {
        const auto integers = file.get_i32_array("tokenizer.ggml.scores");
        scores.emplace(integers->begin(), integers->end());
    } else {
        scores = file.get_f32_array("tokenizer.ggml.scores");
    }
    if (scores) {
        if (scores->size() < n)
            fail("{}: tokenizer.ggml.scores has {} entries for {} tokens", file.name(), scores->size(), n);
        std::copy_n(scores->begin(), n, vocab.scores.begin());
    }
    vocab.types.assign(n, TokenType::Normal);
    if (auto types = file.get_i32_array("tokenizer.ggml.token_type")) {
        if (types->size() < n)
            fail("{}: tokenizer.ggml.token_type has {} entries for {} tokens", file.name(), types->size(), n);
        for (size_t i = 0; i < n; ++i) vocab.types[i] = TokenType((*types)[i]);
    }
    vocab.attrs.resize(n);
    for (size_t i = 0; i < n; ++i) vocab.attrs[i] = attr_of(vocab.types[i]);
}

void read_merges(const gguf::File& file, Vocab& vocab) {
    const auto merges = file.get_string_array("tokenizer.ggml.merges");
    if (!merges) fail("{}: key tokenizer.ggml.merges is missing for a gpt2 tokenizer", file.name());
    vocab.merges.assign(merges->begin(), merges->end());
}

void read_special_ids(const gguf::File& file, Vocab& vocab) {
    const std::pair<std::string_view, TokenId*> keys[] = {
        {"tokenizer.ggml.bos_token_id", &vocab.bos},     {"tokenizer.ggml.eos_token_id", &vocab.eos},
        {"tokenizer.ggml.eot_token_id", &vocab.eot},     {"tokenizer.ggml.eom_token_id", &vocab.eom},
        {"tokenizer.ggml.unknown_token_id", &vocab.unk}, {"tokenizer.ggml.seperator_token_id", &vocab.sep},
        {"tokenizer.ggml.padding_token_id", &vocab.pad}, {"tokenizer.ggml.mask_token_id", &vocab.mask},
    };
    for (auto [key, id] : keys) {
        if (!vocab.has(*id)) *id = no_token;  // a default outside this vocabulary
        // Like llama.cpp, an id past the vocabulary keeps the default instead of failing.
        if (auto value = file.get_u32(key); value && *value < vocab.size()) *id = TokenId(*value);
    }
    if (auto value = file.get_bool("tokenizer.ggml.add_bos_token")) vocab.add_bos = *value;
    if (auto value = file.get_bool("tokenizer.ggml.add_eos_token")) vocab.add_eos = *value;
    if (auto value = file.get_bool("tokenizer.ggml.add_sep_token")) vocab.add_sep = *value;
    for (auto [wanted, id, key] : {std::tuple{vocab.add_bos, vocab.bos, "add_bos_token"},
                                   std::tuple{vocab.add_eos, vocab.eos, "add_eos_token"},
                                   std::tuple{vocab.add_sep, vocab.sep, "add_sep_token"}})
        if (wanted && id == no_token)
            fail("{}: tokenizer.ggml.{} is true but the vocabulary has no such token", file.name(), key);
}

}  // namespace

Vocab from_gguf(const gguf::File& file) {
    const auto model_name = file.get_string("tokenizer.ggml.model");
    if (!model_name) fail("{}: key tokenizer.ggml.model is missing", file.name());
    const Model model = model_named(file, *model_name);
    const std::string_view pre = model == Model::Bpe ? file.get_string("tokenizer.ggml.pre").value_or("") : "";

    Vocab vocab = default_vocab(model, pre);
    if (auto value = file.get_bool("tokenizer.ggml.add_space_prefix")) vocab.add_space_prefix = *value;
    read_tokens(file, vocab);
    if (model == Model::Bpe) read_merges(file, vocab);
    read_special_ids(file, vocab);
    vocab.chat_template = std::string(file.get_string("tokenizer.chat_template").value_or(""));
    detect_special_tokens(vocab);
    return vocab;
}

Vocab load_vocab(const std::filesystem::path& path) {
    if (path.extension() == ".json") return vocab_from_tekken_json(path);
    return from_gguf(gguf::File::open(path));
}

}  // namespace vkllm::tokenizer
