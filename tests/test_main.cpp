// doctest's main, plus end-of-run checks that components register (the GPU fixture registers one
// that fails the run if the validation layer printed anything).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include "test_main.h"

#include <string>

#include "core/env.h"

namespace vkllm::test {

std::vector<std::function<int()>>& end_of_run_checks() {
    static std::vector<std::function<int()>> checks;
    return checks;
}

std::optional<std::filesystem::path> shared_path(std::string_view relative) {
    const std::filesystem::path shared = VKLLM_SHARED_DIR;
    std::filesystem::path path = shared / relative;
    if (std::filesystem::exists(path)) return path;
    if (env::get("CI") == "true" && std::filesystem::is_directory(shared))
        FAIL_CHECK("../shared/" << std::string(relative) << " is missing (CI=true: a missing fixture fails)");
    else
        MESSAGE("skipped: ../shared/" << std::string(relative) << " is missing");
    return std::nullopt;
}

}  // namespace vkllm::test

int main(int argc, char** argv) {
    doctest::Context context(argc, argv);
    int result = context.run();
    if (context.shouldExit()) return result;
    for (auto& check : vkllm::test::end_of_run_checks())
        if (int failure = check()) result = failure;
    return result;
}
