// The tokenizer.model reader on models written here (every kept field, fields to skip, hostile
// bytes), and the SentencePiece vocabulary writer against llama.cpp's own conversion of a real
// tokenizer.model (../shared/testdata/tokenizer/llamacpp/ggml-vocab-llama-spm.gguf), from the
// tokenizer.model and from the tokenizer.json Hugging Face would make of it.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>

#include <nlohmann/json.hpp>

#include "convert/sentencepiece.h"
#include "convert/vocab_keys.h"
#include "core/error.h"
#include "gguf/reader.h"
#include "../tokenizer/vectors.h"
#include "safetensors_writer.h"
#include "sentencepiece_writer.h"
#include "tokenizer/tokenizer.h"
#include "test_main.h"

using namespace vkllm;

namespace {

convert::SentencePieceModel sample_model() {
    convert::SentencePieceModel model;
    model.pieces = {{"<unk>", 0.0f, convert::PieceType::Unknown},     {"<s>", 0.0f, convert::PieceType::Control},
                    {"\xE2\x96\x81the", -1.5f, convert::PieceType::Normal}, {"<0x41>", 0.0f, convert::PieceType::Byte},
                    {"<user>", 0.0f, convert::PieceType::UserDefined}, {"<unused0>", -7.25f, convert::PieceType::Unused}};
    model.model_type = convert::SpmModelType::Bpe;
    model.byte_fallback = true;
    model.add_dummy_prefix = false;
    model.remove_extra_whitespaces = false;
    return model;
}

convert::SentencePieceModel parse(const std::vector<std::byte>& bytes) {
    return convert::parse_sentencepiece(bytes, "t.model");
}

// llama.cpp's conversion of Llama's tokenizer.model, or nullopt (skip) when it is missing.
std::optional<gguf::File> llama_spm() {
    const auto path = test::shared_path("testdata/tokenizer/llamacpp/ggml-vocab-llama-spm.gguf");
    if (!path) return std::nullopt;
    return gguf::File::open(*path);
}

// The pieces of the tokenizer.model a GGUF vocabulary came from.
std::vector<convert::Piece> pieces_of(const gguf::File& vocab) {
    const auto tokens = *vocab.get_string_array("tokenizer.ggml.tokens");
    const auto scores = *vocab.get_f32_array("tokenizer.ggml.scores");
    const auto types = *vocab.get_i32_array("tokenizer.ggml.token_type");
    std::vector<convert::Piece> pieces;
    for (size_t i = 0; i < tokens.size(); ++i)
        pieces.push_back({std::string(tokens[i]), scores[i], convert::PieceType(types[i])});
    return pieces;
}

std::filesystem::path scratch_dir(const std::string& name) {
    const auto dir = std::filesystem::temp_directory_path() / name;
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    return dir;
}

std::vector<std::byte> raw(std::string_view text) {
    const auto bytes = std::as_bytes(std::span(text.data(), text.size()));
    return {bytes.begin(), bytes.end()};
}

}  // namespace

TEST_CASE("the SentencePiece reader keeps pieces, scores, types and flags, and skips every other field") {
    const convert::SentencePieceModel want = sample_model();
    for (bool unknown_fields : {false, true}) {
        CAPTURE(unknown_fields);
        const convert::SentencePieceModel got = parse(test::sentencepiece_bytes(want, unknown_fields));
        REQUIRE(got.pieces.size() == want.pieces.size());
        for (size_t i = 0; i < want.pieces.size(); ++i) {
            CHECK(got.pieces[i].text == want.pieces[i].text);
            CHECK(got.pieces[i].score == want.pieces[i].score);
            CHECK(got.pieces[i].type == want.pieces[i].type);
        }
        CHECK(got.model_type == convert::SpmModelType::Bpe);
        CHECK(got.byte_fallback);
        CHECK(!got.add_dummy_prefix);
        CHECK(!got.remove_extra_whitespaces);
    }
    // Without the specs, proto2's defaults: UNIGRAM, no byte fallback, dummy prefix and whitespace folding.
    const convert::SentencePieceModel defaults = parse(raw(std::string_view("\x0a\x03\x0a\x01" "a", 5)));
    REQUIRE(defaults.pieces.size() == 1);
    CHECK(defaults.pieces[0].text == "a");
    CHECK(defaults.pieces[0].type == convert::PieceType::Normal);
    CHECK(defaults.model_type == convert::SpmModelType::Unigram);
    CHECK(!defaults.byte_fallback);
    CHECK(defaults.add_dummy_prefix);
    CHECK(defaults.remove_extra_whitespaces);
}

TEST_CASE("a truncated or hostile tokenizer.model is refused with one vkllm::Error naming the byte") {
    // Every prefix either parses (it ends between fields) or throws vkllm::Error, nothing else.
    const std::vector<std::byte> bytes = test::sentencepiece_bytes(sample_model());
    size_t refused = 0;
    for (size_t size = 0; size < bytes.size(); ++size) {
        try {
            parse({bytes.begin(), bytes.begin() + ptrdiff_t(size)});
        } catch (const Error&) {
            ++refused;
        }
    }
    CHECK(refused > bytes.size() / 2);

    const auto refuses = [](std::string_view input, const char* message) {
        CAPTURE(message);
        CHECK_THROWS_WITH_AS(parse(raw(input)), doctest::Contains(message), Error);
    };
    refuses("", "t.model: the SentencePiece model has no pieces");
    refuses(std::string_view("\x00", 1), "t.model: the field number 0 at byte 0 is not a valid protobuf field number");
    refuses("\x0e", "t.model: field 1 at byte 0 has the unknown wire type 6");
    refuses("\x08\x01", "t.model: field 1 (pieces) at byte 0 has wire type 0 where 2 was expected");
    refuses("\x0a\x05" "ab", "t.model: the field at byte 0 claims 5 bytes but its message has 2 left");
    refuses("\x0a\x02\x18\x09", "t.model: piece type 9 at byte 2 is not one of SentencePiece's six");
    refuses("\x0a\x02\x15\x01", "t.model: the field at byte 2 claims 4 bytes but its message has 1 left");
    refuses("\x12\x02\x18\x07", "t.model: trainer_spec.model_type 7 at byte 2 is not UNIGRAM, BPE, WORD or CHAR");
    refuses("\x20\xff\xff\xff\xff\xff\xff\xff\xff\xff\x02", "t.model: the varint at byte 1 does not fit in 64 bits");
    refuses("\x20\xff\xff\xff\xff\xff\xff\xff\xff\xff\x81", "t.model: the varint at byte 1 does not fit in 64 bits");
    refuses("\x20\xff", "t.model: a varint at byte 1 runs past the end of its message");
    refuses("\x23\x08\x01", "t.model: the group of field 4 at byte 0 is never closed");
    refuses("\x23\x2c", "t.model: the end-group tag at byte 1 closes field 5 inside the group of field 4");
    refuses("\x24", "t.model: an end-group tag for field 4 at byte 0 closes no group");
    refuses(std::string(100, '\x23'), "t.model: groups nest more than 64 deep at byte 64");
}

TEST_CASE("SentencePiece vocabulary: llama.cpp's conversion of a real tokenizer.model round-trips exactly") {
    const std::optional<gguf::File> reference = llama_spm();
    if (!reference) return;
    // The tokenizer.model llama.cpp read, rebuilt from the pieces it wrote (its user-defined pieces
    // were written as normal, and come back so).
    const auto tokens = *reference->get_string_array("tokenizer.ggml.tokens");
    const auto scores = *reference->get_f32_array("tokenizer.ggml.scores");
    const auto types = *reference->get_i32_array("tokenizer.ggml.token_type");
    REQUIRE(tokens.size() == 32000);
    convert::SentencePieceModel model;
    model.pieces = pieces_of(*reference);
    const auto dir = scratch_dir("vkllm_test_spm_vocab");
    test::write_file(dir / "tokenizer.model", test::sentencepiece_bytes(model));

    gguf::Writer writer;
    CHECK(convert::add_sentencepiece_vocab(writer, dir, 0) == tokens.size());
    const gguf::File got = gguf::File::from_bytes(writer.bytes(), "vocab.gguf");
    CHECK(got.get_string("tokenizer.ggml.model") == "llama");
    CHECK(got.get_string("tokenizer.ggml.pre") == "default");
    const auto got_tokens = *got.get_string_array("tokenizer.ggml.tokens");
    const auto got_scores = *got.get_f32_array("tokenizer.ggml.scores");
    const auto got_types = *got.get_i32_array("tokenizer.ggml.token_type");
    REQUIRE(got_tokens.size() == tokens.size());
    size_t differences = 0;
    for (size_t i = 0; i < tokens.size(); ++i)
        differences += got_tokens[i] != tokens[i] || std::memcmp(&got_scores[i], &scores[i], 4) != 0 ||
                       got_types[i] != types[i];
    CHECK(differences == 0);
    std::filesystem::remove_all(dir);
}

// Without tokenizer.model, the tokenizer.json Hugging Face makes from it: no scores, but the merges in
// the order of the pieces' scores (transformers' SentencePieceExtractor: every split of a piece into
// two pieces, by the piece's score, then by the ids of the halves). The vocabulary rebuilt from the
// merge ranks must tokenize llama.cpp's test strings to llama.cpp's ids.
TEST_CASE("SentencePiece vocabulary from tokenizer.json: scores from the merge ranks tokenize as llama.cpp does") {
    const std::optional<gguf::File> reference = llama_spm();
    if (!reference) return;
    const std::vector<convert::Piece> pieces = pieces_of(*reference);
    std::map<std::string, size_t, std::less<>> ids;
    nlohmann::ordered_json vocab, added = nlohmann::json::array();
    for (size_t id = 0; id < pieces.size(); ++id) {
        ids.emplace(pieces[id].text, id);
        vocab[pieces[id].text] = id;
        if (pieces[id].type == convert::PieceType::Control || pieces[id].type == convert::PieceType::Unknown)
            added.push_back({{"id", id}, {"content", pieces[id].text}, {"special", true}});
    }
    struct Merge {
        float score;
        size_t left, right;
    };
    std::vector<Merge> merges;
    for (const convert::Piece& piece : pieces) {
        if (piece.type != convert::PieceType::Normal) continue;
        for (size_t split = 1; split < piece.text.size(); ++split) {
            const auto left = ids.find(std::string_view(piece.text).substr(0, split));
            const auto right = ids.find(std::string_view(piece.text).substr(split));
            if (left != ids.end() && right != ids.end()) merges.push_back({piece.score, left->second, right->second});
        }
    }
    std::stable_sort(merges.begin(), merges.end(), [](const Merge& a, const Merge& b) {
        return a.score != b.score ? a.score > b.score : std::pair(a.left, a.right) < std::pair(b.left, b.right);
    });
    nlohmann::ordered_json merge_list = nlohmann::json::array();
    for (const Merge& m : merges) merge_list.push_back({pieces[m.left].text, pieces[m.right].text});
    const nlohmann::ordered_json tokenizer = {
        {"added_tokens", added},
        {"model", {{"type", "BPE"}, {"byte_fallback", true}, {"unk_token", "<unk>"}, {"vocab", vocab},
                   {"merges", merge_list}}}};
    const auto dir = scratch_dir("vkllm_test_spm_tokenizer_json");
    std::ofstream(dir / "tokenizer.json") << tokenizer.dump();

    gguf::Writer writer;
    CHECK(convert::add_sentencepiece_vocab(writer, dir, 0) == pieces.size());
    const tokenizer::Tokenizer converted(tokenizer::from_gguf(gguf::File::from_bytes(writer.bytes(), "vocab.gguf")));
    const auto data = std::filesystem::path(VKLLM_SHARED_DIR) / "testdata/tokenizer/llamacpp";
    const auto strings = test::read_inp(data / "ggml-vocab-llama-spm.gguf.inp");
    const auto expected = test::read_out(data / "ggml-vocab-llama-spm.gguf.out");
    REQUIRE(strings.size() == expected.size());
    size_t matching = 0;
    for (size_t i = 0; i < strings.size(); ++i) matching += converted.tokenize(strings[i], false, false) == expected[i];
    CHECK(matching == strings.size());
    std::filesystem::remove_all(dir);
}

TEST_CASE("a tokenizer.json that is not SentencePiece-style BPE, or numbers its pieces wrongly, is refused") {
    const auto dir = scratch_dir("vkllm_test_spm_bad_tokenizer_json");
    const auto refuses = [&](const char* tokenizer, const char* message) {
        CAPTURE(tokenizer);
        std::ofstream(dir / "tokenizer.json") << tokenizer;
        gguf::Writer writer;
        CHECK_THROWS_WITH_AS(convert::add_sentencepiece_vocab(writer, dir, 0), doctest::Contains(message), Error);
    };
    refuses(R"({"model": {"type": "Unigram", "vocab": [["a", 0.0]]}})", "not a SentencePiece-style tokenizer");
    refuses(R"({"model": {"type": "BPE", "byte_fallback": false, "vocab": {"a": 0}}})",
            "not a SentencePiece-style tokenizer");
    refuses(R"({"model": {"type": "BPE", "byte_fallback": true, "vocab": {"a": 0, "b": 0}}})",
            "model.vocab does not number its 2 pieces 0 to 1 once each");
    refuses(R"({"model": {"type": "BPE", "byte_fallback": true, "vocab": {"a": 0, "b": 2}}})",
            "model.vocab does not number its 2 pieces 0 to 1 once each");
    refuses(R"({"model": {"type": "BPE", "byte_fallback": true, "vocab": {"a": 0}, "merges": [5]}})",
            "tokenizer.json: merge 0 is not a pair of pieces");
    std::filesystem::remove(dir / "tokenizer.json");
    gguf::Writer writer;
    CHECK_THROWS_WITH_AS(convert::add_sentencepiece_vocab(writer, dir, 0),
                         doctest::Contains("no tokenizer.model or tokenizer.json"), Error);
    std::filesystem::remove_all(dir);
}

// gguf-py SpecialVocab: a post-processor template ending in another token than eos_token makes that
// token eos and the configured one eot; ids come from tokenizer_config.json before config.json
// (text_config too); the chat template from chat_template.jinja when tokenizer_config.json has none.
TEST_CASE("SentencePiece vocabulary: special ids, add flags and the chat template as gguf-py finds them") {
    const auto dir = scratch_dir("vkllm_test_spm_special_vocab");
    convert::SentencePieceModel model;
    model.pieces = {{"<unk>", 0, convert::PieceType::Unknown}, {"<s>", 0, convert::PieceType::Control},
                    {"</s>", 0, convert::PieceType::Control},  {"<|im_end|>", 0, convert::PieceType::Control},
                    {"a", -1, convert::PieceType::Normal},     {"b", -2, convert::PieceType::Normal}};
    test::write_file(dir / "tokenizer.model", test::sentencepiece_bytes(model));
    std::ofstream(dir / "tokenizer.json") << R"({"added_tokens": [{"id": 1, "content": "<s>"},
  {"id": 2, "content": "</s>"}, {"id": 3, "content": "<|im_end|>"}],
  "post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
    {"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "<|im_end|>", "type_id": 0}}]}})";
    std::ofstream(dir / "tokenizer_config.json") << R"({"bos_token": "<s>", "eos_token": {"content": "</s>"}})";
    std::ofstream(dir / "chat_template.jinja") << "{{ messages }}";
    std::ofstream(dir / "config.json") << R"({"eos_token_id": 0, "text_config": {"pad_token_id": 0, "mask_token_id": 9}})";

    gguf::Writer writer;
    convert::add_sentencepiece_vocab(writer, dir, 0);
    const gguf::File got = gguf::File::from_bytes(writer.bytes(), "vocab.gguf");
    CHECK(got.get_u32("tokenizer.ggml.bos_token_id") == 1u);
    CHECK(got.get_u32("tokenizer.ggml.eos_token_id") == 3u);
    CHECK(got.get_u32("tokenizer.ggml.eot_token_id") == 2u);
    CHECK(got.get_u32("tokenizer.ggml.padding_token_id") == 0u);
    CHECK(got.find("tokenizer.ggml.mask_token_id") == nullptr);  // 9 is past the 6 tokens
    CHECK(got.find("tokenizer.ggml.unknown_token_id") == nullptr);
    CHECK(got.get_bool("tokenizer.ggml.add_bos_token") == true);
    CHECK(got.get_bool("tokenizer.ggml.add_eos_token") == true);
    CHECK(got.get_string("tokenizer.chat_template") == "{{ messages }}");
    std::filesystem::remove_all(dir);
}
