#pragma once
// The tokenizer.* keys of a converted model, written as llama.cpp's converter writes them.
#include <filesystem>

#include "gguf/writer.h"

namespace vkllm::convert {

// From Mistral's tekken.json (conversion/base.py `_set_vocab_mistral`, model-notes.md F.5):
// model gpt2, pre tekken, the control tokens then the byte-level pieces, merges rebuilt from the
// ranks, integer scores and token types, the special ids, add_bos, and the community chat template
// name of the tokenizer version. Returns the number of tokens.
size_t add_tekken_vocab(gguf::Writer& writer, const std::filesystem::path& tekken_json);

}  // namespace vkllm::convert
