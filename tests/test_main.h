#pragma once
#include <functional>
#include <vector>

namespace vkllm::test {

// Checks run after all test cases; a non-zero return fails the run with that exit code.
std::vector<std::function<int()>>& end_of_run_checks();

}  // namespace vkllm::test
