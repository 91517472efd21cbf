#pragma once
// Runs `vkllm ARGS` with extra environment assignments and captures what it prints.
#include <filesystem>
#include <string>

namespace vkllm::test {

struct CliResult {
    int exit_code;
    std::string out, err;
};

// `environment` is prefixed to the command line, e.g. "VKLLM_DEVICE=0"; arguments are shell-quoted
// by the caller. Standard input comes from `input` (a path).
// A whole file's bytes ("" when it cannot be read).
std::string slurp(const std::filesystem::path& path);

CliResult run_cli(const std::string& arguments, const std::string& environment = "",
                  const std::string& input = "/dev/null");
// The same for another program (an installed vkllm, say).
CliResult run_program(const std::string& program, const std::string& arguments, const std::string& environment = "",
                      const std::string& input = "/dev/null");

}  // namespace vkllm::test
