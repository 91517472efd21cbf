#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include <unistd.h>

#include "run_cli.h"

using vkllm::test::run_cli;
using vkllm::test::slurp;

namespace {

std::filesystem::path temp_dir() {
    auto dir = std::filesystem::temp_directory_path() / ("vkllm-synth-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir);
    return dir;
}

bool one_line(const std::string& text) { return !text.empty() && text.find('\n') == text.size() - 1; }

}  // namespace

TEST_CASE("synth writes tiny llama models that info reads and run generates from") {
    auto dir = temp_dir();
    for (std::string type : {"f32", "q8_0", "q4_0"}) {
        CAPTURE(type);
        auto model = (dir / ("tiny-" + type + ".gguf")).string();
        auto synth = run_cli("synth --arch llama --preset tiny --type " + type + " -o " + model + " --seed 7");
        REQUIRE(synth.exit_code == 0);
        auto info = run_cli("info " + model);
        REQUIRE(info.exit_code == 0);
        CHECK(info.out.find("llama.embedding_length                     u32              = 128") != std::string::npos);
        CHECK(info.out.find("30 tensors") != std::string::npos);
        CHECK(info.out.find("blk.2.ffn_down.weight                " + type) != std::string::npos);
        CHECK(info.out.find("tokenizer.ggml.tokens                      [string; 512]") != std::string::npos);
        auto generated = run_cli("run -m " + model + " -n 8 --temp 0");
        CHECK(generated.exit_code == 0);
        CHECK(generated.err.find("tok/s") != std::string::npos);
    }
    std::filesystem::remove_all(dir);
}

TEST_CASE("synth is deterministic in its seed") {
    auto dir = temp_dir();
    auto a = dir / "a.gguf", b = dir / "b.gguf", c = dir / "c.gguf";
    REQUIRE(run_cli("synth --arch llama --preset tiny --type q4_0 --seed 3 -o " + a.string()).exit_code == 0);
    REQUIRE(run_cli("synth --arch llama --preset tiny --type q4_0 --seed 3 -o " + b.string()).exit_code == 0);
    REQUIRE(run_cli("synth --arch llama --preset tiny --type q4_0 --seed 4 -o " + c.string()).exit_code == 0);
    CHECK(slurp(a) == slurp(b));
    CHECK(std::filesystem::file_size(a) == std::filesystem::file_size(c));
    CHECK(slurp(a) != slurp(c));
    std::filesystem::remove_all(dir);
}

TEST_CASE("synth refuses a bad arch, preset or type with one line and exit code 1") {
    auto out = (temp_dir() / "bad.gguf").string();
    for (std::string args : {"--arch gpt9 --preset tiny --type q8_0", "--arch llama --preset huge --type q8_0",
                             "--arch llama --preset tiny --type q3_xx", "--arch llama --preset tiny --type q4_k",
                             "--arch llama --preset 1b --type f32", "--arch llama --preset tiny --type q8_0 --seed x"}) {
        CAPTURE(args);
        auto result = run_cli("synth " + args + " -o " + out);
        CHECK(result.exit_code == 1);
        CHECK(one_line(result.err));
        CHECK(!std::filesystem::exists(out));
    }
    std::filesystem::remove_all(temp_dir());
}
