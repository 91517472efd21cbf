// Tokenizer behaviour on small vocabularies written here (no shared data needed): SPM merges and
// byte fallback, special-token splitting, BOS and leading-space rules, streaming decode, GGUF
// errors, and the pre-tokenizer's llama.cpp-specific splits.
#include <doctest/doctest.h>

#include <algorithm>
#include <random>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "gguf/reader.h"
#include "gguf/writer.h"
#include "tokenizer/pretokenize.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

using namespace vkllm::tokenizer;

namespace {

constexpr TokenId byte_id(uint8_t byte) { return 3 + byte; }
constexpr TokenId space = 259, a = 260, b = 261, space_a = 262, ab = 263, space_ab = 264, tag = 265, ctl = 266;

// <unk> <s> </s>, 256 byte tokens, then "▁" "a" "b" "▁a" "ab" "▁ab", user-defined <tag>, control <ctl>.
vkllm::gguf::Writer spm_writer(std::string_view model = "llama", size_t n_scores = 0) {
    std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
    std::vector<int32_t> types = {2, 3, 3};
    for (int byte = 0; byte < 256; ++byte) {
        tokens.push_back(fmt::format("<0x{:02X}>", byte));
        types.push_back(6);
    }
    for (const char* text : {"\xE2\x96\x81", "a", "b", "\xE2\x96\x81" "a", "ab", "\xE2\x96\x81" "ab"}) {
        tokens.push_back(text);
        types.push_back(1);
    }
    tokens.push_back("<tag>");
    types.push_back(4);
    tokens.push_back("<ctl>");
    types.push_back(3);
    std::vector<float> scores(tokens.size(), 0.0f);
    scores[space] = -1, scores[a] = -2, scores[b] = -3, scores[space_a] = -0.5f, scores[ab] = -0.1f, scores[space_ab] = -0.2f;
    if (n_scores) scores.resize(n_scores);
    vkllm::gguf::Writer writer;
    writer.add_string("tokenizer.ggml.model", model);
    writer.add_string_array("tokenizer.ggml.tokens", std::span<const std::string>(tokens));
    writer.add_array("tokenizer.ggml.scores", std::span<const float>(scores));
    writer.add_array("tokenizer.ggml.token_type", std::span<const int32_t>(types));
    return writer;
}

Vocab vocab_of(const vkllm::gguf::Writer& writer) {
    return from_gguf(vkllm::gguf::File::from_bytes(writer.bytes(), "test.gguf"));
}

std::string bytes_of_word(std::string_view word) {  // GPT-2 alphabet back to raw bytes
    std::string out;
    for (char32_t cpt : decode_utf8(word)) out += char(*unicode_to_byte(cpt));
    return out;
}

std::vector<std::string> split(std::string_view pre, std::string_view text) {
    std::vector<std::string> words;
    for (const std::string& word : PreTokenizer(pre).split(text)) words.push_back(bytes_of_word(word));
    return words;
}

}  // namespace

TEST_CASE("SPM: merges by score, byte fallback, dummy prefix, BOS") {
    const Tokenizer tokenizer(vocab_of(spm_writer()));
    CHECK(tokenizer.tokenize("ab", true, false) == std::vector<TokenId>{1, space_ab});
    CHECK(tokenizer.tokenize("ab", false, false) == std::vector<TokenId>{space_ab});
    CHECK(tokenizer.tokenize("é", true, false) == std::vector<TokenId>{1, space, byte_id(0xC3), byte_id(0xA9)});
    CHECK(tokenizer.tokenize("", true, false) == std::vector<TokenId>{1});
    CHECK(tokenizer.detokenize(std::vector<TokenId>{space_ab}, false, false) == "ab");  // the dummy space goes
    CHECK(tokenizer.detokenize(std::vector<TokenId>{1, space_ab}, true, false) == " ab");  // not after a removed BOS
    CHECK(tokenizer.detokenize(std::vector<TokenId>{1, space_ab}, false, true) == "<s> ab");
    CHECK_THROWS_AS(tokenizer.token_to_piece(999, false), vkllm::Error);
}

TEST_CASE("special tokens: control ones only when parsing specials, user-defined always") {
    const Tokenizer tokenizer(vocab_of(spm_writer()));
    CHECK(tokenizer.tokenize("a<ctl>b", false, true) == std::vector<TokenId>{space_a, ctl, space, b});
    const std::vector<TokenId> literal = tokenizer.tokenize("a<ctl>b", false, false);
    CHECK(std::find(literal.begin(), literal.end(), ctl) == literal.end());
    CHECK(tokenizer.detokenize(literal, false, false) == "a<ctl>b");
    CHECK(tokenizer.tokenize("a<tag>", false, false) == std::vector<TokenId>{space_a, tag});
    CHECK(tokenizer.token_to_piece(ctl, false).empty());
    CHECK(tokenizer.token_to_piece(tag, false) == "<tag>");
    CHECK(tokenizer.is_eog(2));
}

TEST_CASE("streaming decode holds back a split UTF-8 character") {
    const Tokenizer tokenizer(vocab_of(spm_writer()));
    StreamDecoder decoder(tokenizer);
    CHECK(decoder.push(1).empty());
    CHECK(decoder.push(byte_id(0xF0)).empty());
    CHECK(decoder.push(byte_id(0x9F)).empty());
    CHECK(decoder.push(byte_id(0xA6)).empty());
    CHECK(decoder.push(byte_id(0x99)) == "🦙");
    CHECK(decoder.push(a) == "a");
    CHECK(decoder.push(byte_id(0xC3)).empty());
    CHECK(decoder.finish() == "\xEF\xBF\xBD");  // a character left incomplete at the end is U+FFFD
    CHECK(complete_utf8_prefix("ab\xE4\xBD") == 2);
    CHECK(complete_utf8_prefix("ab\xE4\xBD\xA0") == 5);
    CHECK(complete_utf8_prefix("ab\xE0\x80") == 4);  // E0 80 begins only an overlong form: nothing to wait for
}

TEST_CASE("streaming decode turns bytes that make no character into U+FFFD as soon as that is certain") {
    const Tokenizer tokenizer(vocab_of(spm_writer()));
    StreamDecoder decoder(tokenizer);
    const std::string fffd = "\xEF\xBF\xBD";
    CHECK(decoder.push(byte_id(0xFF)) == fffd);  // never in UTF-8
    CHECK(decoder.push(byte_id(0xA9)) == fffd);  // a continuation byte without its lead
    CHECK(decoder.push(byte_id(0xC3)).empty());
    CHECK(decoder.push(a) == fffd + "a");  // 'a' cannot continue C3
    CHECK(decoder.push(byte_id(0xE0)).empty());
    CHECK(decoder.push(byte_id(0x80)) == fffd + fffd);  // E0 80: an overlong form
    CHECK(decoder.push(byte_id(0xED)).empty());
    CHECK(decoder.push(byte_id(0xA0)) == fffd + fffd);  // ED A0: a surrogate
    CHECK(decoder.push(byte_id(0xF4)).empty());
    CHECK(decoder.push(byte_id(0x90)) == fffd + fffd);  // F4 90: past U+10FFFF
    CHECK(decoder.push(byte_id(0xE4)).empty());
    CHECK(decoder.push(byte_id(0xBD)).empty());
    CHECK(decoder.push(byte_id(0xA0)) == "\xE4\xBD\xA0");
    CHECK(decoder.finish().empty());
}

TEST_CASE("valid_utf8 replaces as nlohmann's JSON dump does, and a stream of byte tokens gives the same") {
    const Tokenizer tokenizer(vocab_of(spm_writer()));
    const uint32_t seed = 31;
    std::mt19937 rng(seed);
    size_t replaced = 0;
    for (int round = 0; round < 3000; ++round) {
        CAPTURE(seed);
        CAPTURE(round);
        // ASCII, continuation bytes and lead bytes in about equal parts: many whole characters, many broken ones.
        std::string bytes(rng() % 16, '\0');
        for (char& c : bytes) c = char(rng() % 3 == 0 ? 'x' : rng() % 2 ? 0x80 + rng() % 64 : 0xC0 + rng() % 64);
        const std::string valid = valid_utf8(bytes);
        const std::string dumped = nlohmann::json(bytes).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
        CHECK(valid == nlohmann::json::parse(dumped).get<std::string>());
        CHECK_NOTHROW((void)nlohmann::json(valid).dump());  // strict: throws on ill-formed UTF-8
        replaced += valid != bytes;
        StreamDecoder decoder(tokenizer);
        std::string streamed;
        for (char byte : bytes) {
            const std::string piece = decoder.push(byte_id(uint8_t(byte)));
            CHECK(valid_utf8(piece) == piece);
            streamed += piece;
        }
        CHECK(streamed + decoder.finish() == valid);
    }
    CHECK(replaced > 1000);
}

TEST_CASE("random text decodes back exactly (SPM byte fallback); random bytes never throw") {
    const Tokenizer tokenizer(vocab_of(spm_writer()));
    const uint32_t seed = 99;
    std::mt19937 rng(seed);
    for (int round = 0; round < 300; ++round) {
        CAPTURE(seed);
        CAPTURE(round);
        std::string text;
        for (size_t n = rng() % 30; n > 0; --n) {
            char32_t cpt = rng() % 3 == 0 ? U'a' + rng() % 3 : char32_t(1 + rng() % 0x10FFFF);
            if ((cpt >= 0xD800 && cpt <= 0xDFFF) || cpt == 0x2581) cpt = ' ';  // "▁" itself decodes to ' '
            append_utf8(text, cpt);
        }
        CHECK(tokenizer.detokenize(tokenizer.tokenize(text, false, false), false, false) == text);
        // Malformed UTF-8 goes through byte fallback too; llama.cpp's character walk can pull a
        // following space into a broken sequence, so only the absence of failures is checked.
        std::string bytes(rng() % 30, '\0');
        for (char& c : bytes) c = char(rng() % 256);
        CHECK_NOTHROW(tokenizer.tokenize(bytes, true, true));
    }
}

TEST_CASE("GGUF tokenizer metadata errors name the file and key") {
    auto expect_error = [](vkllm::gguf::Writer writer, const char* message) {
        CAPTURE(message);
        CHECK_THROWS_WITH_AS(Tokenizer(vocab_of(writer)), doctest::Contains(message), vkllm::Error);
    };
    expect_error(vkllm::gguf::Writer(), "tokenizer.ggml.model");
    vkllm::gguf::Writer t5;
    t5.add_string("tokenizer.ggml.model", "t5");
    expect_error(t5, "'t5' is not supported");
    expect_error(spm_writer("gpt2"), "merges");
    vkllm::gguf::Writer bad_pre = spm_writer("gpt2");
    bad_pre.add_string("tokenizer.ggml.pre", "no-such-pre");
    expect_error(bad_pre, "no-such-pre");
    vkllm::gguf::Writer duplicate;
    const std::vector<std::string> tokens = {"x", "y", "x"};
    duplicate.add_string("tokenizer.ggml.model", "llama");
    duplicate.add_string_array("tokenizer.ggml.tokens", std::span<const std::string>(tokens));
    duplicate.add_bool("tokenizer.ggml.add_bos_token", false);
    expect_error(duplicate, "duplicate token 'x'");
    vkllm::gguf::Writer no_bos;
    const std::vector<std::string> one = {"x"};
    no_bos.add_string("tokenizer.ggml.model", "llama");
    no_bos.add_string_array("tokenizer.ggml.tokens", std::span<const std::string>(one));
    expect_error(no_bos, "add_bos_token");
    expect_error(spm_writer("llama", 10), "tokenizer.ggml.scores");
}

TEST_CASE("pre-tokenizers split like llama.cpp") {
    CHECK(split("gpt-2", "Hello world's  123!") == std::vector<std::string>{"Hello", " world", "'s", " ", " 123", "!"});
    CHECK(split("llama-bpe", "I'M 1234567\n\n x") == std::vector<std::string>{"I", "'M", " ", "123", "456", "7", "\n\n", " x"});
    CHECK(split("starcoder", "a12") == std::vector<std::string>{"a", "1", "2"});
    CHECK(split("deepseek-coder", "ab, cd\n12") == std::vector<std::string>{"ab", ",", " cd", "\n", "1", "2"});
    // Tekken: llama.cpp approximates upper/lower case by ASCII (F.4), so "aÉb" stays one word
    // where the Unicode-correct regex would split before É.
    CHECK(split("tekken", "HelloWorld aÉb") == std::vector<std::string>{"Hello", "World", " aÉb"});
    CHECK(split("tekken", "x 2024") == std::vector<std::string>{"x", " ", "2", "0", "2", "4"});
    // Non-ASCII whitespace reads as \s, so U+3000 stays whitespace.
    CHECK(split("gpt-2", "a\u3000b") == std::vector<std::string>{"a", "\u3000", "b"});
    for (const char* pre : {"default", "gpt-2", "llama3", "llama-bpe", "deepseek-llm", "deepseek-coder", "deepseek-v3",
                            "falcon", "mpt", "starcoder", "refact", "tekken", "minimax-m2", "gpt-4o", "qwen2",
                            "chameleon", "viking", "poro-chat", "command-r"}) {
        CAPTURE(pre);
        CHECK_NOTHROW(PreTokenizer(pre).split("Test 123 déjà-vu 漢字 ~!"));
    }
    CHECK_THROWS_WITH_AS(PreTokenizer("nope"), doctest::Contains("'nope'"), vkllm::Error);
}
