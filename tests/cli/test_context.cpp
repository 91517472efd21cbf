// Context that never ends a session, end to end on the bundled stories260K: run generates to a full
// context and says so (or shifts it), chat survives a full context and a turn too long for it with
// piped input and exits 0 at EOF; and the errors that name -c, -m and --mmproj.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "run_cli.h"
#include "test_main.h"

using vkllm::test::CliResult;
using vkllm::test::run_cli;

namespace {

const std::string model = std::string(VKLLM_SOURCE_DIR) + "/models/stories260K.gguf";

size_t count(const std::string& text, const std::string& part) {
    size_t n = 0;
    for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
    return n;
}

// "generation: N tokens" from run's timing line.
int generated_tokens(const std::string& err) {
    const size_t at = err.find("generation: ");
    return at == std::string::npos ? -1 : std::stoi(err.substr(at + 12));
}

}  // namespace

TEST_CASE("run -n 600 -c 256 generates until the context is full and stops with a note; -n -1 does the same") {
    // "Once upon" is 3 tokens with BOS: 253 more positions, and the last sampled token needs none.
    const std::string run = "run -m " + model + " -p 'Once upon' --temp 0 --ignore-eos -c 256 ";
    const CliResult limited = run_cli(run + "-n 600");
    REQUIRE(limited.exit_code == 0);
    CHECK(generated_tokens(limited.err) == 254);
    CHECK(limited.err.find("the context of 256 tokens is full") != std::string::npos);
    const CliResult unlimited = run_cli(run + "-n -1");
    REQUIRE(unlimited.exit_code == 0);
    CHECK(unlimited.out == limited.out);

    // The fit is exact: 254 tokens fill it without the note, as -n 254.
    const CliResult exact = run_cli(run + "-n 254");
    REQUIRE(exact.exit_code == 0);
    CHECK(generated_tokens(exact.err) == 254);
    CHECK(exact.err.find("is full") == std::string::npos);
    CHECK(exact.out == limited.out);
}

TEST_CASE("run --context-shift keeps the first tokens and goes on past the context") {
    const CliResult shifted = run_cli("run -m " + model + " -p 'Once upon' --temp 0 --ignore-eos -c 64 -n 200 --context-shift --keep 2");
    REQUIRE(shifted.exit_code == 0);
    CHECK(generated_tokens(shifted.err) == 200);
    CHECK(shifted.err.find("the context was shifted") != std::string::npos);
    CHECK(shifted.err.find("is full") == std::string::npos);
    const CliResult stopped = run_cli("run -m " + model + " -p 'Once upon' --temp 0 --ignore-eos -c 64 -n 200");
    REQUIRE(stopped.exit_code == 0);
    CHECK(shifted.out.starts_with(stopped.out.substr(0, stopped.out.size() - 1)));  // the same until the first shift
}

TEST_CASE("run --json: the text, tokens, finish reason, seed and timings in one object") {
    const CliResult result = run_cli("run -m " + model + " -p Once -n 6 --temp 0 --seed 3 --json");
    REQUIRE(result.exit_code == 0);
    const auto json = nlohmann::json::parse(result.out);
    CHECK(json["tokens"].size() == 6);
    CHECK(json["generated_tokens"] == 6);
    CHECK(json["prompt_tokens"] == 2);
    CHECK(json["finish_reason"] == "length");
    CHECK(json["seed"] == 3);
    CHECK(json["text"].get<std::string>().size() > 6);
    CHECK(json["timings"].contains("prompt_pipelines_s"));
    CHECK(result.err.find("load: ") != std::string::npos);
}

TEST_CASE("run counts an image's positions as prompt tokens") {
    const std::filesystem::path fixture = std::filesystem::path(VKLLM_SHARED_DIR) / "fixtures/vision/pixtral_vis";
    if (!vkllm::test::shared_path("fixtures/vision/pixtral_vis/model.gguf")) return;
    const std::string text = "Once upon a time there was a little cat.";
    const CliResult run = run_cli("run -m " + (fixture / "model.gguf").string() + " --mmproj " + (fixture / "mmproj.gguf").string() +
                                  " --image " + (fixture / "chelsea.png").string() + " -n 2 --temp 0 --json -p '<__media__>" + text + "'");
    REQUIRE(run.exit_code == 0);
    const CliResult tokens = run_cli("tokenize -m " + (fixture / "model.gguf").string() + " --json '" + text + "'");
    REQUIRE(tokens.exit_code == 0);
    const size_t n_text = nlohmann::json::parse(tokens.out).size();
    CHECK(nlohmann::json::parse(run.out)["prompt_tokens"].get<size_t>() > n_text + 4);  // the image's positions and its [IMG_END]
}

TEST_CASE("chat with piped input survives a full context and a turn too long for it, and exits 0 at EOF") {
    const auto input = std::filesystem::temp_directory_path() / "vkllm-chat-input.txt";
    {
        std::ofstream out(input);
        out << "Hello there\n";
        for (int i = 0; i < 300; ++i) out << "word ";
        out << "\n/help\n";
        for (int i = 0; i < 6; ++i) out << "Tell me a story about a cat and a dog number " << i << "\n";
        out << "/clear\nOnce more\n/exit\n";
        for (int i = 0; i < 300; ++i) out << "unread ";  // after /exit: never read, so never refused
        out << "\n";
    }
    const CliResult chat = run_cli("chat -m " + model + " -c 128 -n 40 --temp 0 --system 'You tell stories.'", "", input.string());
    std::filesystem::remove(input);
    CAPTURE(chat.err);
    REQUIRE(chat.exit_code == 0);
    CHECK(!chat.out.empty());
    CHECK(count(chat.err, "has no chat template; using ChatML") == 1);
    CHECK(count(chat.err, "it was not sent") == 1);
    CHECK(chat.err.find("left out the 1 oldest turn") != std::string::npos);
    CHECK(chat.err.find("/clear starts over") != std::string::npos);
    CHECK(chat.err.find("the conversation is cleared") != std::string::npos);
}

TEST_CASE("-c too large for the device names -c; an mmproj given as -m says what it is") {
    const CliResult huge = run_cli("run -m " + model + " -p Once -c 10000000");
    CHECK(huge.exit_code == 1);
    CHECK(huge.err.find("a context of 10000000 tokens needs") != std::string::npos);
    CHECK(huge.err.find("lower -c to at most") != std::string::npos);
    CHECK(count(huge.err, "\n") == 1);
    const std::filesystem::path mmproj = std::filesystem::path(VKLLM_SHARED_DIR) / "fixtures/vision/gemma3_vis/mmproj.gguf";
    if (!vkllm::test::shared_path("fixtures/vision/gemma3_vis/mmproj.gguf")) return;
    const CliResult projector = run_cli("run -m " + mmproj.string() + " -p Once");
    CHECK(projector.exit_code == 1);
    CHECK(projector.err.find(mmproj.string() + " is a vision projector (mmproj), not a language model") != std::string::npos);
}
