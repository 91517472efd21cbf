// The text stream of a reply: stop strings held back until they cannot match, stop and
// end-of-generation tokens, the token limit, the leading space of SPM vocabularies, and text that is
// always well-formed UTF-8 (split characters held back, stray bytes replaced).
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "engine/generation.h"
#include "gguf/reader.h"
#include "tokenizer/unicode.h"

namespace vkllm::engine {
namespace {

const tokenizer::Tokenizer& stories_tokenizer() {
    static const tokenizer::Tokenizer tokenizer(tokenizer::from_gguf(
        gguf::File::open(std::filesystem::path(VKLLM_SOURCE_DIR) / "models/stories260K.gguf")));
    return tokenizer;
}

// Pushes the tokens of `text` one by one; returns every piece shown, in order.
std::vector<std::string> stream_pieces(TextStream& stream, std::string_view text) {
    std::vector<std::string> pieces;
    for (tokenizer::TokenId id : stories_tokenizer().tokenize(text, false, false)) {
        pieces.push_back(stream.push(id));
        if (stream.finish_reason()) break;
    }
    return pieces;
}

std::string joined(const std::vector<std::string>& pieces) {
    std::string text;
    for (const std::string& piece : pieces) text += piece;
    return text;
}

TEST_CASE("a reply without stops shows every piece at once and ends at its token limit") {
    TextStream stream(stories_tokenizer(), {.max_tokens = 3});
    const auto ids = stories_tokenizer().tokenize("Once upon a time there", false, false);
    REQUIRE(ids.size() > 3);
    std::string text;
    for (size_t i = 0; i < 3; ++i) {
        CHECK(!stream.finish_reason());
        text += stream.push(ids[i]);
    }
    CHECK(stream.finish_reason() == FinishReason::Length);
    CHECK(stream.n_tokens() == 3);
    CHECK(text == " Once upon a");  // pieces keep the SPM space prefix (see the last case)
    CHECK(stream.push(ids[3]).empty());
}

TEST_CASE("a stop string ends the reply before it, and text that may begin one is held back") {
    TextStream stream(stories_tokenizer(), {.stops = {.strings = {"a time"}}});
    const std::vector<std::string> pieces = stream_pieces(stream, "Once upon a time there was");
    CHECK(stream.finish_reason() == FinishReason::Stop);
    CHECK(joined(pieces) == " Once upon ");
    // " a" could begin "a time": it was never shown on its own.
    for (const std::string& piece : pieces) CHECK(piece.find('a') == std::string::npos);
}

TEST_CASE("held-back text that turns out not to be a stop string is shown") {
    TextStream stream(stories_tokenizer(), {.stops = {.strings = {"a dog"}}});
    const std::string text = joined(stream_pieces(stream, "Once upon a time there was"));
    CHECK(!stream.finish_reason());
    CHECK(text + stream.finish(FinishReason::Context) == " Once upon a time there was");
    CHECK(stream.finish_reason() == FinishReason::Context);
}

TEST_CASE("the earliest of several stop strings wins, and empty ones are ignored") {
    TextStream stream(stories_tokenizer(), {.stops = {.strings = {"", "there", "upon"}}});
    CHECK(joined(stream_pieces(stream, "Once upon a time there")) == " Once ");
    CHECK(stream.finish_reason() == FinishReason::Stop);
}

TEST_CASE("end-of-generation and stop tokens end the reply and show nothing; ignore_eos makes eos text") {
    const tokenizer::Tokenizer& tok = stories_tokenizer();
    const tokenizer::TokenId eos = tok.vocab().eos;
    REQUIRE(tok.is_eog(eos));
    const tokenizer::TokenId once = tok.tokenize("Once", false, false).at(0);
    {
        TextStream stream(tok, {});
        CHECK(stream.push(once) == " Once");
        CHECK(stream.push(eos).empty());
        CHECK(stream.finish_reason() == FinishReason::Stop);
        CHECK(stream.n_tokens() == 1);
    }
    {
        TextStream stream(tok, {.stops = {.tokens = {once}}});
        CHECK(stream.push(once).empty());
        CHECK(stream.finish_reason() == FinishReason::Stop);
        CHECK(stream.n_tokens() == 0);
    }
    {
        TextStream stream(tok, {.ignore_eos = true});
        stream.push(eos);
        CHECK(!stream.finish_reason());
        CHECK(stream.n_tokens() == 1);
    }
}

TEST_CASE("a reply that starts a text drops the leading space of its first piece") {
    TextStream stream(stories_tokenizer(), {}, /*strip_leading_space=*/true);
    CHECK(joined(stream_pieces(stream, "Once upon")) == "Once upon");
}

const std::string replacement = "\xEF\xBF\xBD";  // U+FFFD

tokenizer::TokenId byte_token(uint8_t byte) {
    const tokenizer::TokenId id = stories_tokenizer().find(fmt::format("<0x{:02X}>", byte));
    REQUIRE(id != tokenizer::no_token);
    return id;
}

bool whole_utf8(const std::vector<std::string>& pieces) {
    return std::ranges::all_of(pieces, [](const std::string& piece) { return tokenizer::valid_utf8(piece) == piece; });
}

TEST_CASE("a character split across tokens arrives whole, in the piece of its last byte") {
    TextStream stream(stories_tokenizer(), {});
    const std::vector<std::string> pieces = stream_pieces(stream, "a llama 🦙 named Jürgen");
    CHECK(joined(pieces) == " a llama 🦙 named Jürgen");
    CHECK(whole_utf8(pieces));
    CHECK(std::ranges::count(pieces, "") >= 4);  // the first three bytes of 🦙 and the first of ü showed nothing
}

TEST_CASE("bytes that make no character become U+FFFD; so does a character cut by the token limit or the end") {
    const tokenizer::Tokenizer& tok = stories_tokenizer();
    const tokenizer::TokenId once = tok.tokenize("Once", false, false).at(0);
    {
        TextStream stream(tok, {});
        CHECK(stream.push(byte_token(0xFF)) == replacement);
        CHECK(stream.push(byte_token(0xE4)).empty());
        CHECK(stream.push(once) == replacement + " Once");
        CHECK(stream.push(byte_token(0xE4)).empty());
        CHECK(stream.finish(FinishReason::Context) == replacement);
    }
    {
        TextStream stream(tok, {.max_tokens = 3});
        CHECK(stream.push(once) == " Once");
        CHECK(stream.push(byte_token(0xE4)).empty());
        CHECK(stream.push(byte_token(0xBD)) == replacement);  // the third byte of 你 would have come next
        CHECK(stream.finish_reason() == FinishReason::Length);
    }
}

TEST_CASE("a stop string right after a split character, or beginning with one, ends the reply there") {
    {
        TextStream stream(stories_tokenizer(), {.stops = {.strings = {"!"}}});
        const std::vector<std::string> pieces = stream_pieces(stream, "Hallö! And more");  // ö is two byte tokens
        CHECK(joined(pieces) == " Hallö");
        CHECK(whole_utf8(pieces));
        CHECK(stream.finish_reason() == FinishReason::Stop);
    }
    {
        TextStream stream(stories_tokenizer(), {.stops = {.strings = {"ö!"}}});
        CHECK(joined(stream_pieces(stream, "Hallö! And more")) == " Hall");
        CHECK(stream.finish_reason() == FinishReason::Stop);
    }
    {
        // A stop string with stray bytes is looked for as the text shows them: never inside a character.
        TextStream stream(stories_tokenizer(), {.stops = {.strings = {"\xB6"}}});  // ö's second byte
        CHECK(joined(stream_pieces(stream, "Hallö")) == " Hallö");
        CHECK(!stream.finish_reason());
        CHECK(stream.push(byte_token(0xB6)).empty());
        CHECK(stream.finish_reason() == FinishReason::Stop);
    }
}

TEST_CASE("finish names match OpenAI's finish_reason where they overlap") {
    CHECK(finish_reason_name(FinishReason::Stop) == "stop");
    CHECK(finish_reason_name(FinishReason::Length) == "length");
}

}  // namespace
}  // namespace vkllm::engine
