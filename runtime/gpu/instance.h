#pragma once
// The Vulkan instance: loads the loader through volk (no link-time libvulkan), optionally turns on
// the Khronos validation layer with synchronization validation, and counts what it reports.
#include <volk.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
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

// Warnings and errors the validation layer has reported since the process started (all instances),
// less those set aside as the layer's gap (below).
uint64_t validation_message_count();

// Old validation layers: a layer older than an extension vkllm uses flags that extension's structures
// and SPIR-V capability as unknown (Debian 12's 1.3.239 and VK_KHR_cooperative_matrix, 1.3.255). Such
// a message, matched by its exact message id and subject (the structure type or capability number),
// is set aside and counted; every other message still counts.
// The extension whose gap in a layer of `layer_version` the message `id` / `text` comes from, among
// the extensions `in_use`; nullopt for every other message.
std::optional<std::string_view> layer_gap_extension(std::string_view id, std::string_view text, uint32_t layer_version,
                                                    std::span<const std::string> in_use);
// Marks an extension as used (its structures queried or the extension enabled), so that the gap of an
// older layer for it is set aside.
void note_extension_in_use(std::string_view extension);
// Messages set aside as the layer's gap since the process started.
uint64_t validation_messages_set_aside();

}  // namespace vkllm::gpu
