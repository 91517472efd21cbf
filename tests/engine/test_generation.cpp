// The text stream of a reply: stop strings held back until they cannot match, stop and
// end-of-generation tokens, the token limit, and the leading space of SPM vocabularies.
#include <doctest/doctest.h>

#include <filesystem>

#include "engine/generation.h"
#include "gguf/reader.h"

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

TEST_CASE("finish names match OpenAI's finish_reason where they overlap") {
    CHECK(finish_reason_name(FinishReason::Stop) == "stop");
    CHECK(finish_reason_name(FinishReason::Length) == "length");
}

}  // namespace
}  // namespace vkllm::engine
