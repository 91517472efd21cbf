// doctest's main, plus end-of-run checks that components register (the GPU fixture registers one
// that fails the run if the validation layer printed anything).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include "test_main.h"

namespace vkllm::test {

std::vector<std::function<int()>>& end_of_run_checks() {
    static std::vector<std::function<int()>> checks;
    return checks;
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
