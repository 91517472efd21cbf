#pragma once
// Every Vulkan call goes through VKLLM_VK_CHECK: a failure throws vkllm::Error naming the call and
// the VkResult; a lost device throws gpu::DeviceLost so callers can say so plainly.
#include <volk.h>

#include "core/error.h"

namespace vkllm::gpu {

class DeviceLost : public Error {
public:
    using Error::Error;
};

const char* result_name(VkResult result);
[[noreturn]] void throw_vulkan_error(VkResult result, const char* call);

inline void check(VkResult result, const char* call) {
    if (result < 0) throw_vulkan_error(result, call);
}

}  // namespace vkllm::gpu

#define VKLLM_VK_CHECK(call) ::vkllm::gpu::check((call), #call)
