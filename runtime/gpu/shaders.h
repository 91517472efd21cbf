#pragma once
// The SPIR-V of every pipeline, compiled from shaders/ at build time and embedded in the library.
// shaders/CMakeLists.txt is the one list of pipelines; a pipeline's name is its entry there.
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace vkllm::shaders {

struct Embedded {
    std::string_view name;
    std::span<const uint32_t> spirv;
};

std::span<const Embedded> all();
// Whether a pipeline was built: the cooperative-matrix ones only where their toolchain was found.
bool built(std::string_view name);
// Throws vkllm::Error for a name that was not built.
std::span<const uint32_t> find(std::string_view name);

}  // namespace vkllm::shaders
