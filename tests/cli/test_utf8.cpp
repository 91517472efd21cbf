// Text out of vkllm is always well-formed UTF-8 (issue 31): a random-weight synth model emits
// byte-fallback tokens that make no character on their own, and run --json, run and chat show them as
// U+FFFD; tokenize --json gives a piece that is not whole UTF-8 as its bytes, and detokenize prints
// well-formed text.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "run_cli.h"

using vkllm::test::CliResult;
using vkllm::test::run_cli;

namespace {

const std::string replacement = "\xEF\xBF\xBD";  // U+FFFD
const std::string stories = std::string(VKLLM_SOURCE_DIR) + "/models/stories260K.gguf";

// nlohmann's dump with its default (strict) error handler throws on ill-formed UTF-8.
bool well_formed(const std::string& text) {
    try {
        (void)nlohmann::json(text).dump();
        return true;
    } catch (const nlohmann::json::type_error&) {
        return false;
    }
}

}  // namespace

TEST_CASE("a random-weight model's text is well-formed UTF-8 through run --json, run and chat") {
    const auto dir = std::filesystem::temp_directory_path() / ("vkllm-utf8-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir);
    const std::string model = (dir / "tiny-q8_0.gguf").string();
    REQUIRE(run_cli("synth --arch llama --preset tiny --type q8_0 -o " + model).exit_code == 0);
    size_t replaced = 0;
    for (int i = 0; i < 12; ++i) {
        CAPTURE(i);
        // Greedy from different prompts, and sampled with different seeds.
        const std::string sampling = i % 2 ? fmt::format("--temp 1 --seed {}", i) : "--temp 0";
        const CliResult run = run_cli(fmt::format("run -m {} -n 48 --json {} -p 'Once upon a time {}'", model, sampling, i));
        REQUIRE(run.exit_code == 0);
        const nlohmann::json json = nlohmann::json::parse(run.out);  // the parser refuses ill-formed UTF-8 too
        const std::string text = json["text"];
        CHECK(well_formed(text));
        replaced += text.find(replacement) != std::string::npos;
    }
    CHECK(replaced > 0);  // the model did emit bytes that make no character

    const CliResult plain = run_cli("run -m " + model + " -n 64 --temp 1 --seed 5 --no-display-prompt -p 'Once'");
    REQUIRE(plain.exit_code == 0);
    CHECK(well_formed(plain.out));

    const auto input = dir / "chat-input.txt";
    std::ofstream(input) << "Hello there\nTell me a story\nAnd another one\n";
    const CliResult chat = run_cli("chat -m " + model + " -n 48 --temp 1 --seed 3", "", input.string());
    REQUIRE(chat.exit_code == 0);
    CHECK(well_formed(chat.out));
    CHECK(chat.out.find(replacement) != std::string::npos);
    std::filesystem::remove_all(dir);
}

TEST_CASE("tokenize --json gives a piece that is not whole UTF-8 as its bytes; detokenize prints well-formed text") {
    const CliResult tokens = run_cli("tokenize -m " + stories + " --no-bos --json 'ü'");
    REQUIRE(tokens.exit_code == 0);
    // SPM byte fallback: the dummy-prefix space, then ü's two bytes, each a token (llama-server's /tokenize
    // with_pieces gives such pieces as byte values).
    const nlohmann::json pieces = nlohmann::json::parse(tokens.out);
    REQUIRE(pieces.size() == 3);
    CHECK(pieces[0]["piece"] == " ");
    CHECK(pieces[1]["piece"] == nlohmann::json::array({0xC3}));
    CHECK(pieces[2]["piece"] == nlohmann::json::array({0xBC}));
    const std::string lead = std::to_string(pieces[1]["id"].get<int>()), tail = std::to_string(pieces[2]["id"].get<int>());
    CHECK(run_cli("detokenize -m " + stories + " " + lead + " " + tail).out == "ü\n");
    CHECK(run_cli("detokenize -m " + stories + " " + lead).out == replacement + "\n");
    CHECK(run_cli("detokenize -m " + stories + " " + tail + " " + lead).out == replacement + replacement + "\n");
}
