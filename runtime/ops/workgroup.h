#pragma once
// Workgroup sizes within the device's limits (a profile such as vulkan-1.1-minimum allows 128).
#include <algorithm>
#include <bit>
#include <cstdint>

#include "gpu/capabilities.h"

namespace vkllm::ops {

// `preferred` (a power of two), or the largest power of two below it that the device allows along x.
inline uint32_t flat_workgroup_size(const gpu::Capabilities& caps, uint32_t preferred) {
    return std::min(preferred, std::bit_floor(std::min(caps.max_workgroup_invocations, caps.max_workgroup_size[0])));
}

}  // namespace vkllm::ops
