#pragma once
// vkllm::Error: one sentence naming what failed (file, key, tensor, byte offset, Vulkan call).
// Parsers and loaders throw it at the boundary; the CLI prints it and exits 1.
// Formatting is {fmt}'s (libfmt-dev): GCC 12's libstdc++ has no <format>.
#include <fmt/format.h>
#include <stdexcept>
#include <string>

namespace vkllm {

class Error : public std::runtime_error {
public:
    explicit Error(const std::string& message) : std::runtime_error(message) {}
};

template <class... Args>
[[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) {
    throw Error(fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace vkllm
