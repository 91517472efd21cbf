#include "run_cli.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

namespace vkllm::test {

std::string slurp(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

CliResult run_cli(const std::string& arguments, const std::string& environment, const std::string& input) {
    return run_program(VKLLM_CLI_PATH, arguments, environment, input);
}

CliResult run_program(const std::string& program, const std::string& arguments, const std::string& environment,
                      const std::string& input) {
    auto directory = std::filesystem::temp_directory_path();
    std::string stem = "vkllm-cli-" + std::to_string(getpid());
    auto out_path = directory / (stem + ".out"), err_path = directory / (stem + ".err");
    std::string command = environment + " " + program + " " + arguments + " >" + out_path.string() + " 2>" +
                          err_path.string() + " <" + input;
    int status = std::system(command.c_str());
    CliResult result{WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), slurp(out_path), slurp(err_path)};
    std::filesystem::remove(out_path);
    std::filesystem::remove(err_path);
    return result;
}

}  // namespace vkllm::test
