// The vocabulary of a SentencePiece model as llama.cpp's converter writes it (vocab_keys.h).
#include <cctype>
#include <charconv>
#include <map>

#include "convert/hf_config.h"
#include "convert/sentencepiece.h"
#include "convert/special_vocab.h"
#include "convert/vocab_keys.h"
#include "core/error.h"
#include "tokenizer/unicode.h"

namespace vkllm::convert {

namespace {

using json = nlohmann::json;

// convert_hf_to_gguf.py `does_token_look_special`: added tokens some models forget to mark special.
bool looks_special(std::string_view text) {
    return text == "<pad>" || text == "<mask>" || text == "<2mass>" || text == "[@BOS@]" ||
           (text.starts_with("<|") && text.ends_with("|>")) ||
           (text.starts_with("<\uff5c") && text.ends_with("\uff5c>")) ||
           (text.starts_with("<unused") && text.ends_with(">"));
}

struct SpmTokens {
    std::vector<std::string> tokens;
    std::vector<float> scores;
    std::vector<int32_t> types;

    void set(size_t id, std::string text, PieceType type) {
        tokens[id] = std::move(text);
        scores[id] = -1000.0f;  // every added token's score
        types[id] = int32_t(type);
    }
};

// An added token's id, or nullopt past the vocabulary (llama.cpp skips those with a warning).
std::optional<size_t> added_id(const json& id, size_t n_vocab, const std::filesystem::path& file,
                               std::string_view text) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0)
        fail("{}: the id of added token '{}' is not a non-negative integer", file.string(), text);
    return id.get<uint64_t>() < n_vocab ? std::optional<size_t>(id.get<uint64_t>()) : std::nullopt;
}

bool is_byte_piece(std::string_view text) {
    return text.size() == 6 && text.starts_with("<0x") && text.ends_with(">") && std::isxdigit(uint8_t(text[3])) &&
           std::isxdigit(uint8_t(text[4]));
}

// A merge of tokenizer.json: "left right" (before transformers 4.45) or ["left", "right"].
std::optional<std::string> merged_text(const json& merge) {
    if (merge.is_array() && merge.size() == 2 && merge[0].is_string() && merge[1].is_string())
        return merge[0].get<std::string>() + merge[1].get<std::string>();
    if (!merge.is_string()) return std::nullopt;
    std::string text = merge.get<std::string>();
    const size_t space = text.find(' ', 1);
    if (space == std::string::npos) return std::nullopt;
    return text.erase(space, 1);
}

// The pieces of a tokenizer.json that Hugging Face made from a SentencePiece BPE model (type BPE
// with byte_fallback): texts by id, "<0xXX>" typed byte, the unk_token unknown, special added
// tokens control. The file keeps no scores, but the SentencePiece BPE trainer scores a piece by the
// order of the merge that made it, and HF's conversion lists the merges in that order: a piece first
// made by merge r scores -r, so llama.cpp's score-ordered merging follows the ranks. (llama.cpp's
// LlamaHfVocab writes -1000 for every piece, which merges leftmost-first instead, and types only the
// special_tokens_map's few tokens as control.)
std::vector<Piece> tokenizer_json_pieces(const json& tokenizer, const std::filesystem::path& path) {
    const auto model = tokenizer.is_object() ? tokenizer.find("model") : tokenizer.end();
    if (model == tokenizer.end() || !model->is_object() || model->value("type", json()) != "BPE" ||
        model->value("byte_fallback", json()) != true || !model->contains("vocab") || !(*model)["vocab"].is_object())
        fail("{}: not a SentencePiece-style tokenizer (model type BPE with byte_fallback and a vocab)", path.string());
    const json& vocab = (*model)["vocab"];
    if (vocab.empty()) fail("{}: model.vocab has no pieces", path.string());
    std::vector<Piece> pieces(vocab.size());
    std::vector<bool> numbered(vocab.size()), scored(vocab.size());
    std::map<std::string, size_t, std::less<>> ids;
    for (const auto& [text, id] : vocab.items()) {
        if (!id.is_number_unsigned() || id.get<uint64_t>() >= pieces.size() || numbered[id.get<uint64_t>()])
            fail("{}: model.vocab does not number its {} pieces 0 to {} once each", path.string(), pieces.size(),
                 pieces.size() - 1);
        numbered[id.get<uint64_t>()] = true;
        pieces[id.get<uint64_t>()] = {text, 0.0f, is_byte_piece(text) ? PieceType::Byte : PieceType::Normal};
        ids.emplace(text, id.get<uint64_t>());
    }
    const auto merges = model->find("merges");
    const size_t n_merges = merges != model->end() && merges->is_array() ? merges->size() : 0;
    for (size_t rank = 0; rank < n_merges; ++rank) {
        const std::optional<std::string> text = merged_text((*merges)[rank]);
        if (!text) fail("{}: merge {} is not a pair of pieces", path.string(), rank);
        const auto it = ids.find(*text);
        if (it == ids.end() || scored[it->second]) continue;
        pieces[it->second].score = -float(rank);
        scored[it->second] = true;
    }
    if (const auto unk = model->value("unk_token", json()); unk.is_string())
        if (const auto it = ids.find(unk.get<std::string>()); it != ids.end()) pieces[it->second].type = PieceType::Unknown;
    const auto added_tokens = tokenizer.find("added_tokens");
    if (added_tokens == tokenizer.end() || !added_tokens->is_array()) return pieces;
    for (const json& added : *added_tokens)
        if (added.is_object() && added.value("special", json()) == true && added.value("id", json()).is_number_unsigned() &&
            added["id"].get<uint64_t>() < pieces.size())
            pieces[added["id"].get<uint64_t>()].type = PieceType::Control;
    return pieces;
}

// `_create_vocab_sentencepiece`: the pieces, then the two added-token tables over them.
SpmTokens sentencepiece_tokens(const std::vector<Piece>& pieces, const std::filesystem::path& dir,
                               uint64_t vocab_size, const std::optional<json>& tokenizer_config) {
    const size_t n_vocab = vocab_size != 0 ? vocab_size : pieces.size();
    SpmTokens v;
    for (size_t i = 0; i < n_vocab; ++i) v.tokens.push_back(fmt::format("[PAD{}]", i));
    v.scores.assign(n_vocab, -10000.0f);
    v.types.assign(n_vocab, int32_t(PieceType::Unused));
    for (size_t i = 0; i < std::min(n_vocab, pieces.size()); ++i) {
        const Piece& piece = pieces[i];
        v.tokens[i] = piece.text;
        v.scores[i] = piece.score;
        // sentencepiece's IsUnknown / IsControl / IsUnused / IsByte; user-defined pieces are none of them
        v.types[i] = int32_t(piece.type == PieceType::UserDefined ? PieceType::Normal : piece.type);
    }
    const std::filesystem::path added_path = dir / "added_tokens.json";
    if (const std::optional<json> added = optional_json(added_path)) {
        if (!added->is_object()) fail("{}: not an object of token texts to ids", added_path.string());
        for (const auto& [text, id] : added->items())
            if (auto at = added_id(id, n_vocab, added_path, text)) v.set(*at, text, PieceType::UserDefined);
    }
    if (!tokenizer_config || !tokenizer_config->contains("added_tokens_decoder")) return v;
    const json& decoder = (*tokenizer_config)["added_tokens_decoder"];
    const std::filesystem::path config_path = dir / "tokenizer_config.json";
    if (!decoder.is_object()) fail("{}: added_tokens_decoder is not an object", config_path.string());
    for (const auto& [key, entry] : decoder.items()) {
        int64_t id = -1;
        const auto [end, error] = std::from_chars(key.data(), key.data() + key.size(), id);
        if (error != std::errc() || end != key.data() + key.size() || !entry.is_object() || !entry.contains("content") ||
            !entry["content"].is_string())
            fail("{}: added_tokens_decoder entry '{}' is not an id with a content string", config_path.string(), key);
        std::string text = entry["content"].get<std::string>();
        const auto at = added_id(id, n_vocab, config_path, text);
        if (!at) continue;
        const auto special = entry.find("special");
        if ((special != entry.end() && special->is_boolean() && special->get<bool>()) || looks_special(text)) {
            v.set(*at, std::move(text), PieceType::Control);
            continue;
        }
        // user-defined tokens are matched in raw text: their spaces are stored as spaces
        v.set(*at, tokenizer::replace_all(text, "\u2581", " "), PieceType::UserDefined);
    }
    return v;
}

}  // namespace

size_t add_sentencepiece_vocab(gguf::Writer& writer, const std::filesystem::path& dir, uint64_t vocab_size) {
    std::optional<json> tokenizer_config = optional_json(dir / "tokenizer_config.json");
    if (tokenizer_config && !tokenizer_config->is_object())
        fail("{}: the top level is not an object", (dir / "tokenizer_config.json").string());
    const std::optional<json> tokenizer = optional_json(dir / "tokenizer.json");
    if (!tokenizer && !std::filesystem::exists(dir / "tokenizer.model"))
        fail("{}: no tokenizer.model or tokenizer.json", dir.string());
    const std::vector<Piece> pieces = tokenizer && !std::filesystem::exists(dir / "tokenizer.model")
                                          ? tokenizer_json_pieces(*tokenizer, dir / "tokenizer.json")
                                          : read_sentencepiece(dir / "tokenizer.model").pieces;
    const SpmTokens v = sentencepiece_tokens(pieces, dir, vocab_size, tokenizer_config);
    writer.add_string("tokenizer.ggml.model", "llama");
    writer.add_string("tokenizer.ggml.pre", "default");
    writer.add_string_array("tokenizer.ggml.tokens", std::span<const std::string>(v.tokens));
    writer.add_array("tokenizer.ggml.scores", std::span<const float>(v.scores));
    writer.add_array("tokenizer.ggml.token_type", std::span<const int32_t>(v.types));
    add_special_vocab(writer, dir, v.tokens.size(), tokenizer, std::move(tokenizer_config));
    return v.tokens.size();
}

}  // namespace vkllm::convert
