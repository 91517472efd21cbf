#pragma once
// Writes SentencePiece tokenizer.model files (protobuf ModelProto) for tests and fuzz seeds.
#include <cstddef>
#include <vector>

#include "convert/sentencepiece.h"

namespace vkllm::test {

// The model's pieces, trainer_spec (model_type, byte_fallback) and normalizer_spec (add_dummy_prefix,
// remove_extra_whitespaces) as protobuf. With `unknown_fields`, also fields the reader must skip:
// strings, varints, a fixed64, a nested message and a group, at the top level and inside the specs.
std::vector<std::byte> sentencepiece_bytes(const convert::SentencePieceModel& model, bool unknown_fields = true);

}  // namespace vkllm::test
