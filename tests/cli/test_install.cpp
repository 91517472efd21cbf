// `cmake --install` gives a vkllm that works with the source and build trees out of reach (issue 31):
// the installed program, run from an unrelated working directory, writes a synth model (whose
// vocabulary is built in) and generates from it.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include <unistd.h>

#include "run_cli.h"

using vkllm::test::CliResult;
using vkllm::test::run_program;

TEST_CASE("an installed vkllm runs synth and run from any working directory") {
    const auto root = std::filesystem::temp_directory_path() / ("vkllm-install-" + std::to_string(getpid()));
    const auto prefix = root / "prefix", work = root / "work";
    std::filesystem::create_directories(work);
    const std::string install = "'" VKLLM_CMAKE "' --install '" VKLLM_BUILD_DIR "' --prefix '" + prefix.string() + "' >/dev/null";
    REQUIRE(std::system(install.c_str()) == 0);
    const std::filesystem::path vkllm = prefix / "bin/vkllm";
    REQUIRE(std::filesystem::exists(vkllm));
    // Nothing of the source tree's models/ is named in the program: it carries what it needs.
    CHECK(vkllm::test::slurp(vkllm).find(VKLLM_SOURCE_DIR "/models") == std::string::npos);

    const std::string in_work = "cd '" + work.string() + "' &&";
    const CliResult synth = run_program(vkllm.string(), "synth --arch llama --preset tiny --type q8_0 -o tiny.gguf", in_work);
    CAPTURE(synth.err);
    REQUIRE(synth.exit_code == 0);
    CHECK(std::filesystem::exists(work / "tiny.gguf"));
    const CliResult run = run_program(vkllm.string(), "run -m tiny.gguf -n 8 --temp 0 --ignore-eos -p Once", in_work);
    CAPTURE(run.err);
    CHECK(run.exit_code == 0);
    CHECK(run.out.starts_with("Once"));
    CHECK(run.err.find("generation: 8 tokens") != std::string::npos);
    std::filesystem::remove_all(root);
}
