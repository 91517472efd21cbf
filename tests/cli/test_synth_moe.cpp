// A Mixtral-style model from `vkllm synth --experts` against llama.cpp's logits (tests/data/mixtral_synth):
// routing, the selected experts' products (one chunk of prefill through matmul_id) and the weighted
// combine, end to end, in F32 and Q8_0.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include <fmt/format.h>
#include <unistd.h>

#include "../model/fixture_check.h"
#include "run_cli.h"

using vkllm::test::run_cli;

TEST_CASE("a synthetic Mixtral-style model matches llama.cpp's logits") {
    const auto data = std::filesystem::path(VKLLM_SOURCE_DIR) / "tests/data/mixtral_synth";
    const auto dir = std::filesystem::temp_directory_path() / ("vkllm-synth-moe-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir);
    for (auto [type, quantized] : {std::pair{"f32", false}, std::pair{"q8_0", true}}) {
        CAPTURE(std::string(type));
        const std::string model = (dir / (std::string(type) + ".gguf")).string();
        const std::string logits = (dir / (std::string(type) + ".f32")).string();
        REQUIRE(run_cli(fmt::format(
                            "synth --arch llama --preset tiny --type {} --experts 4 --experts-used 2 --seed 1 -o {}",
                            type, model))
                    .exit_code == 0);
        auto eval = run_cli(
            fmt::format("eval -m {} --tokens-file {} --logits-out {}", model, (data / "tokens.txt").string(), logits));
        INFO(eval.err);
        REQUIRE(eval.exit_code == 0);
        std::string detail;
        const bool passed = vkllm::test::meets_criteria(
            vkllm::test::read_f32(logits), data / fmt::format("logits_{}.f32", type), 512, quantized, detail);
        INFO(detail);
        CHECK(passed);
    }
    std::filesystem::remove_all(dir);
}
