#pragma once
// The Vulkan instance: loads the loader through volk (no link-time libvulkan), optionally turns on
// the Khronos validation layer with synchronization validation, and counts what it reports.
#include <volk.h>

#include <cstdint>
#include <vector>

namespace vkllm::gpu {

struct InstanceOptions {
    bool validation = false;  // also switched on by VKLLM_VALIDATION=1
};

class Instance {
public:
    explicit Instance(InstanceOptions options = {});
    ~Instance();
    Instance(const Instance&) = delete;
    Instance& operator=(const Instance&) = delete;

    VkInstance handle() const { return instance_; }
    const std::vector<VkPhysicalDevice>& physical_devices() const { return physical_devices_; }
    bool validation() const { return messenger_ != VK_NULL_HANDLE; }

private:
    VkInstance instance_ = VK_NULL_HANDLE;
    VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
    std::vector<VkPhysicalDevice> physical_devices_;
};

// Warnings and errors the validation layer has reported since the process started (all instances).
uint64_t validation_message_count();

}  // namespace vkllm::gpu
