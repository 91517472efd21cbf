#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>
#include <unistd.h>

#include "run_cli.h"
#include "test_main.h"

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

TEST_CASE("synth writes the same file for any number of threads") {
    auto dir = temp_dir();
    for (std::string type : {"q4_0", "f16"}) {
        CAPTURE(type);
        std::string reference;
        for (std::string threads : {"1", "3", "0"}) {
            CAPTURE(threads);
            auto model = dir / ("threads-" + threads + ".gguf");
            REQUIRE(run_cli("synth --arch llama --preset tiny --type " + type + " --threads " + threads + " -o " +
                            model.string()).exit_code == 0);
            if (reference.empty()) reference = slurp(model);
            else CHECK(slurp(model) == reference);
        }
    }
    std::filesystem::remove_all(dir);
}

TEST_CASE("synth --vocab takes a vocab-only GGUF's tokenizer and sizes token_embd and output to it") {
    const auto vocab = vkllm::test::shared_path("testdata/tokenizer/llamacpp/ggml-vocab-gpt-2.gguf");
    if (!vocab) return;
    auto dir = temp_dir();
    auto model = (dir / "gpt2-vocab.gguf").string();
    REQUIRE(run_cli("synth --arch llama --preset tiny --type q8_0 --vocab " + vocab->string() + " -o " + model).exit_code == 0);
    auto info = run_cli("info " + model);
    REQUIRE(info.exit_code == 0);
    CHECK(info.out.find("tokenizer.ggml.tokens                      [string; 50257]") != std::string::npos);
    CHECK(info.out.find("tokenizer.ggml.merges") != std::string::npos);
    auto ids = run_cli("tokenize -m " + model + " --ids 'Hello world'");
    CHECK(ids.out == "[15496, 995]\n");  // GPT-2's ids, as llama.cpp's tokenizer tests give them
    auto generated = run_cli("run -m " + model + " -n 8 --temp 0 --ignore-eos --json -p Hello");
    REQUIRE(generated.exit_code == 0);
    CHECK(nlohmann::json::parse(generated.out)["tokens"].size() == 8);
    std::filesystem::remove_all(dir);
}

TEST_CASE("synth refuses a bad arch, preset, type, thread count or vocabulary with one line and exit code 1") {
    auto out = (temp_dir() / "bad.gguf").string();
    const std::string not_gguf = std::string(VKLLM_SOURCE_DIR) + "/models/README.md";
    const std::vector<std::string> refused = {"--arch gpt9 --preset tiny --type q8_0",
                                              "--arch llama --preset huge --type q8_0",
                                              "--arch llama --preset tiny --type q3_xx",
                                              "--arch llama --preset tiny --type q4_k",
                                              "--arch llama --preset tiny --type q8_0 --seed x",
                                              "--arch llama --preset tiny --type q8_0 --threads 5000",
                                              "--arch llama --preset tiny --type q8_0 --vocab /no/such/vocab.gguf",
                                              "--arch llama --preset tiny --type q8_0 --vocab " + not_gguf};
    for (const std::string& args : refused) {
        CAPTURE(args);
        auto result = run_cli("synth " + args + " -o " + out);
        CHECK(result.exit_code == 1);
        CHECK(one_line(result.err));
        CHECK(!std::filesystem::exists(out));
    }
    CHECK(run_cli("synth --arch llama --preset huge --type q8_0 -o " + out).err.find("presets: tiny, 1b, 3b, 8b") !=
          std::string::npos);
    std::filesystem::remove_all(temp_dir());
}
