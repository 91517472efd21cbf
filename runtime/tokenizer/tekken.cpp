#include "tokenizer/tekken.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <sstream>
#include <unordered_map>

#include "core/error.h"
#include "core/file.h"
#include "tokenizer/unicode.h"

namespace vkllm::tokenizer {

namespace {

using nlohmann::json;

// mistral_common's special tokens of Tekken v3 files that do not list their own.
constexpr std::array<std::string_view, 20> default_specials = {
    "<unk>", "<s>", "</s>", "[INST]", "[/INST]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]",
    "[TOOL_RESULTS]", "[/TOOL_RESULTS]", "[TOOL_CALLS]", "[IMG]", "<pad>", "[IMG_BREAK]", "[IMG_END]",
    "[PREFIX]", "[MIDDLE]", "[SUFFIX]", "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]", "[TOOL_CONTENT]"};

std::string decode_base64(std::string_view text, std::string_view name, std::string_view where) {
    auto value = [](char c) -> int {
        if (c >= 'A' && c <= 'Z') return c - 'A';
        if (c >= 'a' && c <= 'z') return c - 'a' + 26;
        if (c >= '0' && c <= '9') return c - '0' + 52;
        if (c == '+') return 62;
        if (c == '/') return 63;
        return -1;
    };
    while (!text.empty() && text.back() == '=') text.remove_suffix(1);
    std::string out;
    uint32_t bits = 0;
    int n_bits = 0;
    for (char c : text) {
        const int v = value(c);
        if (v < 0) fail("{}: {}: '{}' is not base64", name, where, text);
        bits = (bits << 6) | uint32_t(v);
        n_bits += 6;
        if (n_bits >= 8) {
            n_bits -= 8;
            out += char((bits >> n_bits) & 0xFF);
        }
    }
    if (out.empty()) fail("{}: {}: empty token bytes", name, where);
    return out;
}

// Ranked byte sequences, index = rank, from either schema.
std::vector<std::string> read_ranks(const json& root, std::string_view name) {
    std::vector<std::string> ranks;
    if (root.contains("bpe_ranks")) {
        std::istringstream fields(root.at("bpe_ranks").get<std::string>());
        std::string label, token;
        size_t offset = 0;
        if (!(fields >> label >> offset)) fail("{}: bpe_ranks does not start with 'name offset'", name);
        ranks.resize(offset);
        while (fields >> token) ranks.push_back(decode_base64(token, name, "bpe_ranks"));
        return ranks;
    }
    const json& vocab = root.at("vocab");
    ranks.resize(vocab.size());
    for (const json& entry : vocab) {
        const size_t rank = entry.at("rank").get<size_t>();
        if (rank >= ranks.size()) fail("{}: vocab rank {} is past the {} entries", name, rank, ranks.size());
        ranks[rank] = decode_base64(entry.at("token_bytes").get<std::string>(), name, "vocab");
    }
    return ranks;
}

std::string to_byte_alphabet(std::string_view bytes) {
    std::string out;
    for (char byte : bytes) out += byte_to_unicode(uint8_t(byte));
    return out;
}

// Merges the way llama.cpp's converter rebuilds them from tiktoken ranks: every split of a token
// into two tokens, ordered by the token's rank, then by the ranks of the left and right parts.
std::vector<std::string> rebuild_merges(const std::vector<std::string>& ranks) {
    std::unordered_map<std::string_view, size_t> rank_of;
    for (size_t rank = 0; rank < ranks.size(); ++rank) rank_of.emplace(ranks[rank], rank);
    std::vector<std::string> merges;
    std::vector<std::pair<size_t, size_t>> splits;  // (left rank, right rank)
    for (const std::string& token : ranks) {
        splits.clear();
        for (size_t cut = 1; cut < token.size(); ++cut) {
            auto left = rank_of.find(std::string_view(token).substr(0, cut));
            auto right = rank_of.find(std::string_view(token).substr(cut));
            if (left != rank_of.end() && right != rank_of.end()) splits.emplace_back(left->second, right->second);
        }
        std::sort(splits.begin(), splits.end());
        for (auto [left, right] : splits)
            merges.push_back(to_byte_alphabet(ranks[left]) + " " + to_byte_alphabet(ranks[right]));
    }
    return merges;
}

std::vector<std::string> special_names(const json& root, size_t n_special, std::string_view name) {
    std::vector<std::string> names;
    if (root.contains("special_tokens")) {
        for (const json& entry : root.at("special_tokens")) {
            const size_t rank = entry.at("rank").get<size_t>();
            if (rank != names.size()) fail("{}: special_tokens rank {} is out of order", name, rank);
            names.push_back(entry.at("token_str").get<std::string>());
        }
    } else {
        names.assign(default_specials.begin(), default_specials.end());
    }
    if (names.size() > n_special) fail("{}: {} special tokens for {} special ids", name, names.size(), n_special);
    for (size_t i = names.size(); i < n_special; ++i) names.push_back("<SPECIAL_" + std::to_string(i) + ">");
    return names;
}

Vocab build_vocab(const json& root, std::string_view name) {
    const json& config = root.at("config");
    const size_t n_special = config.at("default_num_special_tokens").get<size_t>();
    const size_t vocab_size = config.at("default_vocab_size").get<size_t>();
    if (vocab_size < n_special) fail("{}: default_vocab_size {} is below the {} special tokens", name, vocab_size, n_special);
    std::vector<std::string> ranks = read_ranks(root, name);
    ranks.resize(std::min(ranks.size(), vocab_size - n_special));  // the model uses the first ranks only

    Vocab vocab = default_vocab(Model::Bpe, "tekken");
    vocab.tokens = special_names(root, n_special, name);
    vocab.types.assign(n_special, TokenType::Control);
    for (const std::string& bytes : ranks) {
        if (bytes.empty()) fail("{}: a rank below {} has no token bytes", name, ranks.size());
        vocab.tokens.push_back(to_byte_alphabet(bytes));
        vocab.types.push_back(TokenType::Normal);
    }
    for (TokenType type : vocab.types) vocab.attrs.push_back(attr_of(type));
    vocab.scores.assign(vocab.tokens.size(), 0.0f);
    vocab.merges = rebuild_merges(ranks);
    auto id_of = [&](std::string_view text) {
        auto it = std::find(vocab.tokens.begin(), vocab.tokens.begin() + ptrdiff_t(n_special), text);
        return it == vocab.tokens.begin() + ptrdiff_t(n_special) ? no_token : TokenId(it - vocab.tokens.begin());
    };
    vocab.unk = id_of("<unk>"), vocab.bos = id_of("<s>"), vocab.eos = id_of("</s>"), vocab.pad = id_of("<pad>");
    if (vocab.bos == no_token) fail("{}: the special tokens have no '<s>' for BOS", name);
    detect_special_tokens(vocab);
    return vocab;
}

}  // namespace

Vocab vocab_from_tekken_text(std::string_view text, std::string_view name) {
    try {
        return build_vocab(json::parse(text), name);
    } catch (const json::exception& error) {
        fail("{}: not a tekken.json: {}", name, error.what());
    }
}

Vocab vocab_from_tekken_json(const std::filesystem::path& path) {
    return vocab_from_tekken_text(read_text_file(path, "tekken.json"), path.string());
}

}  // namespace vkllm::tokenizer
