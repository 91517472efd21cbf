#pragma once
#include <filesystem>
#include <functional>
#include <optional>
#include <string_view>
#include <vector>

namespace vkllm::test {

// Checks run after all test cases; a non-zero return fails the run with that exit code.
std::vector<std::function<int()>>& end_of_run_checks();

// A file or folder under ../shared (fixtures, testdata) that a test needs, by its path there: the full
// path when it exists. When it does not, says that the test skips it, naming it, and returns nullopt;
// under CI (CI=true) with ../shared present, a missing one also fails the test, so that a fixture
// renamed or left out cannot pass as a skip.
std::optional<std::filesystem::path> shared_path(std::string_view relative);

}  // namespace vkllm::test
