#pragma once
// A logical device on the chosen physical device: one compute queue, a command pool, the memory
// allocator and the pipeline cache. Selection: --device / VKLLM_DEVICE (an index or part of the
// name), else the best by type (discrete, integrated, virtual, CPU); never a null-hardware device.
#include <volk.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gpu/capabilities.h"
#include "gpu/instance.h"

namespace vkllm::gpu {

class Allocator;
class PipelineCache;

struct DeviceOptions {
    std::optional<std::string> selector;  // else VKLLM_DEVICE, else the best device
    // Opens a null-hardware device (a driver that compiles with no GPU behind it, such as
    // RADV_FORCE_FAMILY's): pipelines can be created, nothing can be submitted.
    bool allow_null_hardware = false;
    // Pipelines keep the compiler's statistics (VK_KHR_pipeline_executable_properties).
    bool pipeline_statistics = false;
};

struct DeviceChoice {
    std::vector<Capabilities> devices;  // every physical device, in enumeration order
    size_t chosen = 0;
};

// Probes every device and picks one; throws vkllm::Error when there is none or the selector
// matches none.
DeviceChoice choose_device(const Instance& instance, std::optional<std::string> selector = std::nullopt);

// Why the device cannot run vkllm, or an empty string when it can. With compile_only, a null-hardware
// device that could otherwise run vkllm passes.
std::string missing_requirements(const Capabilities& caps, bool compile_only = false);

class Device {
public:
    explicit Device(const Instance& instance, std::optional<std::string> selector = std::nullopt);
    Device(const Instance& instance, DeviceOptions options);
    ~Device();
    Device(const Device&) = delete;
    Device& operator=(const Device&) = delete;

    const Capabilities& caps() const { return caps_; }
    bool pipeline_statistics() const { return pipeline_statistics_; }
    // Turns the fp16 kernels off, or back on where the device has them, for the pipelines chosen
    // from now on (VKLLM_DISABLE_F16 sets it at creation): tests compare both paths on one device.
    void enable_float16_kernels(bool enabled);
    // The same for int8 activations (Capabilities::int8_matmul; VKLLM_INT8_ACTIVATIONS sets it at
    // creation): on where the device has integer dot products, or off.
    void enable_int8_activations(bool enabled);
    VkDevice handle() const { return device_; }
    VkQueue queue() const { return queue_; }
    Allocator& allocator() { return *allocator_; }
    PipelineCache& pipelines() { return *pipelines_; }

    VkCommandBuffer allocate_command_buffer();
    void free_command_buffer(VkCommandBuffer command_buffer);
    // Submits and blocks until the GPU has finished it.
    void submit_and_wait(VkCommandBuffer command_buffer);
    void wait_idle();

private:
    Capabilities caps_;
    bool pipeline_statistics_ = false;
    VkPhysicalDevice physical_ = VK_NULL_HANDLE;
    VkDevice device_ = VK_NULL_HANDLE;
    VkQueue queue_ = VK_NULL_HANDLE;
    VkCommandPool command_pool_ = VK_NULL_HANDLE;
    VkFence fence_ = VK_NULL_HANDLE;
    std::unique_ptr<Allocator> allocator_;
    std::unique_ptr<PipelineCache> pipelines_;

    Device(const Instance& instance, DeviceChoice choice, const DeviceOptions& options);
};

}  // namespace vkllm::gpu
