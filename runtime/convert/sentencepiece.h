#pragma once
// SentencePiece's tokenizer.model: a protobuf ModelProto (sentencepiece_model.proto) read with a
// minimal, bounds-checked wire-format reader. Only what a GGUF vocabulary needs is kept: the pieces
// (text, score, type), the trainer's model type and byte fallback, and two normalizer flags; every
// other field is skipped by its wire type. Malformed input throws a vkllm::Error naming the byte offset.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

namespace vkllm::convert {

// SentencePiece.Type, numbered as in the proto (and as GGUF's token_type).
enum class PieceType : int32_t { Normal = 1, Unknown = 2, Control = 3, UserDefined = 4, Unused = 5, Byte = 6 };

struct Piece {
    std::string text;
    float score = 0;
    PieceType type = PieceType::Normal;
};

// TrainerSpec.ModelType.
enum class SpmModelType : int32_t { Unigram = 1, Bpe = 2, Word = 3, Char = 4 };

struct SentencePieceModel {
    std::vector<Piece> pieces;
    SpmModelType model_type = SpmModelType::Unigram;  // trainer_spec.model_type
    bool byte_fallback = false;                       // trainer_spec.byte_fallback
    bool add_dummy_prefix = true;                     // normalizer_spec.add_dummy_prefix
    bool remove_extra_whitespaces = true;             // normalizer_spec.remove_extra_whitespaces
};

// Parses a serialized ModelProto; `name` stands for the file in errors. Throws when the bytes are
// not well-formed protobuf, a kept field has the wrong wire type, a piece type is not one of the six,
// or there are no pieces.
SentencePieceModel parse_sentencepiece(std::span<const std::byte> bytes, const std::string& name);
SentencePieceModel read_sentencepiece(const std::filesystem::path& path);

}  // namespace vkllm::convert
