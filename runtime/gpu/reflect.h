#pragma once
// Reads what the host must know from a SPIR-V compute module, so it never repeats a binding table:
// the buffers it binds, its push-constant size and its workgroup size (literal or specialized).
#include <volk.h>

#include <array>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace vkllm::gpu {

struct SpecConstant {
    uint32_t id;
    uint32_t value;  // a float goes in as its bits (std::bit_cast)
};

struct ShaderInfo {
    std::vector<VkDescriptorType> bindings;  // set 0, binding i
    uint32_t push_constant_bytes = 0;
    std::array<uint32_t, 3> local_size{1, 1, 1};       // with the module's default spec values
    std::array<int32_t, 3> local_size_spec_id{-1, -1, -1};  // -1: a literal size

    // The workgroup size once `spec` is applied.
    std::array<uint32_t, 3> local_size_with(std::span<const SpecConstant> spec) const;
};

// Throws vkllm::Error naming `name` when the module is malformed or uses what vkllm does not bind
// (descriptor sets other than 0, images, gaps in the binding numbers).
ShaderInfo reflect(std::string_view name, std::span<const uint32_t> spirv);

}  // namespace vkllm::gpu
