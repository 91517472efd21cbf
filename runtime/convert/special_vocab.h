#pragma once
// gguf-py's SpecialVocab: the special token ids, add_* flags and chat template a converted model
// takes from the Hugging Face tokenizer files beside its vocabulary.
#include <cstddef>
#include <filesystem>
#include <optional>

#include <nlohmann/json.hpp>

#include "gguf/writer.h"

namespace vkllm::convert {

// dir/name parsed, or nullopt when there is no such file.
std::optional<nlohmann::json> optional_json(const std::filesystem::path& path);

// The ids of bos, eos, unk, sep, pad and mask (eot/eom when a post-processor moves eos) from
// tokenizer_config.json (looked up in tokenizer.json's added tokens) then config.json, ids at or
// past n_vocab skipped; add_bos/add_eos/add_sep from tokenizer.json's post-processor then
// tokenizer_config.json; the chat template (tokenizer_config.json, chat_template.jinja or .json).
// `tokenizer` and `tokenizer_config` are dir/tokenizer.json and dir/tokenizer_config.json as the caller
// read them.
void add_special_vocab(gguf::Writer& writer, const std::filesystem::path& dir, size_t n_vocab,
                       const std::optional<nlohmann::json>& tokenizer, std::optional<nlohmann::json> tokenizer_config);

}  // namespace vkllm::convert
