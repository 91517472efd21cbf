#pragma once
// Mistral's tekken.json (tiktoken-style byte-level BPE) as a Vocab, laid out the way llama.cpp's
// converter writes it into GGUF (model-notes.md F.5): ids 0..n_special-1 are control tokens
// (named by `special_tokens`, the rest "<SPECIAL_i>"), then the ranked byte sequences in the GPT-2
// byte alphabet, with merges rebuilt from the ranks; pre-tokenizer "tekken", BOS added.
//
// Accepted schemas: the full one ({config, vocab: [{rank, token_bytes (base64), token_str}],
// special_tokens: [{rank, token_str, is_control}]}) and the compressed one of js-tiktoken
// ({config, bpe_ranks: "name offset b64 b64 ..."}, rank = offset + index).
#include <filesystem>
#include <string_view>

#include "tokenizer/vocab.h"

namespace vkllm::tokenizer {

// Throws a vkllm::Error naming the file and the offending field for malformed input.
Vocab vocab_from_tekken_json(const std::filesystem::path& path);
Vocab vocab_from_tekken_text(std::string_view json, std::string_view name);

}  // namespace vkllm::tokenizer
