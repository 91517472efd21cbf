#pragma once
// The tokenizer.* keys of a converted model, written as llama.cpp's converter writes them.
#include <cstdint>
#include <filesystem>

#include "gguf/writer.h"

namespace vkllm::convert {

// From Mistral's tekken.json (conversion/base.py `_set_vocab_mistral`, model-notes.md F.5):
// model gpt2, pre tekken, the control tokens then the byte-level pieces, merges rebuilt from the
// ranks, integer scores and token types, the special ids, add_bos, and the community chat template
// name of the tokenizer version. Returns the number of tokens.
size_t add_tekken_vocab(gguf::Writer& writer, const std::filesystem::path& tekken_json);

// From SentencePiece's dir/tokenizer.model and the Hugging Face files beside it (convert_hf_to_gguf.py
// `_create_vocab_sentencepiece`, gguf-py `SpecialVocab`): model llama, pre default, the pieces with
// their scores and types (user-defined pieces count as normal; without tokenizer.model, the pieces
// of tokenizer.json's SentencePiece-style BPE, scored by merge rank), added_tokens.json then
// tokenizer_config.json's added_tokens_decoder over them, ids past the pieces up to vocab_size (0:
// the pieces' count) as "[PADi]" unused tokens; the special ids from tokenizer_config.json (looked up
// in tokenizer.json's added tokens) and config.json, add_bos/add_eos/add_sep from tokenizer.json's
// post-processor and tokenizer_config.json, and the chat template. Returns the number of tokens.
size_t add_sentencepiece_vocab(gguf::Writer& writer, const std::filesystem::path& dir, uint64_t vocab_size);

}  // namespace vkllm::convert
