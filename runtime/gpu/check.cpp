#include "gpu/check.h"

#include <string>

namespace vkllm::gpu {

const char* result_name(VkResult result) {
    switch (result) {
#define VKLLM_RESULT(name) case name: return #name;
        VKLLM_RESULT(VK_SUCCESS)
        VKLLM_RESULT(VK_NOT_READY)
        VKLLM_RESULT(VK_TIMEOUT)
        VKLLM_RESULT(VK_INCOMPLETE)
        VKLLM_RESULT(VK_ERROR_OUT_OF_HOST_MEMORY)
        VKLLM_RESULT(VK_ERROR_OUT_OF_DEVICE_MEMORY)
        VKLLM_RESULT(VK_ERROR_INITIALIZATION_FAILED)
        VKLLM_RESULT(VK_ERROR_DEVICE_LOST)
        VKLLM_RESULT(VK_ERROR_MEMORY_MAP_FAILED)
        VKLLM_RESULT(VK_ERROR_LAYER_NOT_PRESENT)
        VKLLM_RESULT(VK_ERROR_EXTENSION_NOT_PRESENT)
        VKLLM_RESULT(VK_ERROR_FEATURE_NOT_PRESENT)
        VKLLM_RESULT(VK_ERROR_INCOMPATIBLE_DRIVER)
        VKLLM_RESULT(VK_ERROR_TOO_MANY_OBJECTS)
        VKLLM_RESULT(VK_ERROR_FORMAT_NOT_SUPPORTED)
        VKLLM_RESULT(VK_ERROR_FRAGMENTED_POOL)
        VKLLM_RESULT(VK_ERROR_UNKNOWN)
        VKLLM_RESULT(VK_ERROR_OUT_OF_POOL_MEMORY)
        VKLLM_RESULT(VK_ERROR_INVALID_EXTERNAL_HANDLE)
        VKLLM_RESULT(VK_ERROR_FRAGMENTATION)
        VKLLM_RESULT(VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS)
        VKLLM_RESULT(VK_PIPELINE_COMPILE_REQUIRED)
#undef VKLLM_RESULT
        default: return "VkResult(unknown)";
    }
}

void throw_vulkan_error(VkResult result, const char* call) {
    std::string message = std::string(call) + " failed with " + result_name(result);
    if (result == VK_ERROR_DEVICE_LOST)
        throw DeviceLost("the GPU device was lost (VK_ERROR_DEVICE_LOST) in " + std::string(call));
    if (result == VK_ERROR_OUT_OF_DEVICE_MEMORY || result == VK_ERROR_OUT_OF_HOST_MEMORY)
        message += " (out of memory)";
    throw Error(message);
}

}  // namespace vkllm::gpu
