#include "gpu/device.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <fmt/format.h>

#include "core/env.h"
#include "gpu/check.h"
#include "gpu/cooperative_matrix_khr.h"
#include "gpu/memory.h"
#include "gpu/pipeline.h"

namespace vkllm::gpu {
namespace {

int type_rank(VkPhysicalDeviceType type) {
    switch (type) {
        case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return 4;
        case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return 3;
        case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return 2;
        case VK_PHYSICAL_DEVICE_TYPE_CPU: return 1;
        default: return 0;
    }
}

uint64_t device_local_bytes(const Capabilities& caps) {
    uint64_t total = 0;
    for (const auto& heap : caps.heaps)
        if (heap.device_local) total += heap.size;
    return total;
}

std::string lowercase(std::string text) {
    std::ranges::transform(text, text.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    return text;
}

size_t select(const std::vector<Capabilities>& devices, const std::optional<std::string>& selector) {
    if (selector && !selector->empty()) {
        size_t index = 0;
        auto [end, error] = std::from_chars(selector->data(), selector->data() + selector->size(), index);
        if (error == std::errc() && end == selector->data() + selector->size()) {
            if (index >= devices.size())
                fail("device index {} does not exist: there are {} Vulkan devices", index, devices.size());
            return index;
        }
        for (size_t i = 0; i < devices.size(); ++i)
            if (lowercase(devices[i].name).find(lowercase(*selector)) != std::string::npos) return i;
        fail("no Vulkan device name contains '{}' (see 'vkllm devices')", *selector);
    }
    size_t best = SIZE_MAX;
    for (size_t i = 0; i < devices.size(); ++i) {
        if (!missing_requirements(devices[i]).empty()) continue;  // null hardware included
        auto key = [&](size_t k) { return std::pair(type_rank(devices[k].type), device_local_bytes(devices[k])); };
        if (best == SIZE_MAX || key(i) > key(best)) best = i;
    }
    if (best == SIZE_MAX)
        fail("no Vulkan device can run vkllm: {}: {}", devices[0].name, missing_requirements(devices[0]));
    return best;
}

}  // namespace

std::string missing_requirements(const Capabilities& caps, bool compile_only) {
    // A profile's name goes with what it took away, so the reason is not blamed on the driver.
    const std::string profile = caps.profile.empty() ? "" : fmt::format(" (VKLLM_DEVICE_PROFILE={})", caps.profile);
    if (caps.api_version < VK_API_VERSION_1_2) return "it supports only Vulkan 1.0/1.1 (vkllm needs 1.2)";
    if (caps.compute_queue_family == UINT32_MAX) return "it has no compute queue";
    // Kernels without subgroup arithmetic or ballots have `_basic` builds (shaders/subgroup_ops.glsl).
    if (!caps.has_subgroup(VK_SUBGROUP_FEATURE_BASIC_BIT))
        return "it lacks basic subgroup operations in compute shaders" + profile;
    if (caps.null_hardware && !compile_only)
        return "it is null hardware, a driver that only compiles (RADV_FORCE_FAMILY): see 'vkllm shaders'";
    // Kernels keep one shared-memory partial per subgroup, sized for subgroups of 4 lanes or more.
    if (caps.min_subgroup_size < 4)
        return fmt::format("its subgroups of {} lanes are below the 4 vkllm needs", caps.min_subgroup_size) + profile;
    return {};
}

DeviceChoice choose_device(const Instance& instance, std::optional<std::string> selector) {
    DeviceChoice choice;
    for (VkPhysicalDevice physical : instance.physical_devices()) choice.devices.push_back(probe(physical));
    if (choice.devices.empty())
        fail("no Vulkan device found; install a driver (for a CPU device: apt-get install mesa-vulkan-drivers)");
    if (!selector) selector = env::get("VKLLM_DEVICE");
    choice.chosen = select(choice.devices, selector);
    return choice;
}

Device::Device(const Instance& instance, std::optional<std::string> selector)
    : Device(instance, DeviceOptions{.selector = std::move(selector)}) {}

Device::Device(const Instance& instance, DeviceOptions options)
    : Device(instance, choose_device(instance, options.selector), options) {}

Device::Device(const Instance& instance, DeviceChoice choice, const DeviceOptions& options)
    : caps_(std::move(choice.devices[choice.chosen])),
      pipeline_statistics_(options.pipeline_statistics),
      physical_(instance.physical_devices()[choice.chosen]) {
    if (std::string missing = missing_requirements(caps_, options.allow_null_hardware); !missing.empty())
        fail("Vulkan device '{}' cannot run vkllm: {}", caps_.name, missing);

    // Enable exactly the optional features the probe found; shader variants rely on them.
    VkPhysicalDeviceVulkan11Features features11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
    features11.storageBuffer16BitAccess = caps_.storage_buffer_16bit;
    features11.storagePushConstant16 = caps_.push_constant_16bit;
    VkPhysicalDeviceVulkan12Features features12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    features12.shaderFloat16 = caps_.float16;
    features12.shaderInt8 = caps_.int8;
    features12.storageBuffer8BitAccess = caps_.storage_buffer_8bit;
    features12.timelineSemaphore = caps_.timeline_semaphore;
    features12.vulkanMemoryModel = features12.vulkanMemoryModelDeviceScope = caps_.coopmat_kernels();
    VkPhysicalDeviceVulkan13Features features13{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES};
    features13.subgroupSizeControl = caps_.subgroup_size_control;
    features13.computeFullSubgroups = caps_.compute_full_subgroups;
    features13.maintenance4 = caps_.maintenance4;
    features13.synchronization2 = caps_.synchronization2;
    features13.shaderIntegerDotProduct = caps_.integer_dot_product;
    VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    features.features.shaderInt16 = caps_.int16;
    features.features.shaderInt64 = caps_.int64;
    features.pNext = &features11;
    features11.pNext = &features12;
    if (caps_.api_version >= VK_API_VERSION_1_3) features12.pNext = &features13;
    VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR executable_properties{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR};
    executable_properties.pipelineExecutableInfo = VK_TRUE;
    std::vector<const char*> extensions;
    if (pipeline_statistics_) {
        if (!caps_.pipeline_executable_properties)
            fail("Vulkan device '{}' reports no compiler statistics (VK_KHR_pipeline_executable_properties)", caps_.name);
        extensions.push_back(VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
        executable_properties.pNext = features.pNext;
        features.pNext = &executable_properties;
    }
    // With the cooperative-matrix kernels on only; off, the device is created as before (Debian 12's
    // validation layer, 1.3.239, predates the extension).
    VkPhysicalDeviceCooperativeMatrixFeaturesKHR matrix_features{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR};
    matrix_features.cooperativeMatrix = VK_TRUE;
    if (caps_.coopmat_kernels()) {
        extensions.push_back(VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME);
        matrix_features.pNext = features.pNext;
        features.pNext = &matrix_features;
    }

    float priority = 1.0f;
    VkDeviceQueueCreateInfo queue_info{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    queue_info.queueFamilyIndex = caps_.compute_queue_family;
    queue_info.queueCount = 1;
    queue_info.pQueuePriorities = &priority;
    VkDeviceCreateInfo device_info{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
    device_info.pNext = &features;
    device_info.queueCreateInfoCount = 1;
    device_info.pQueueCreateInfos = &queue_info;
    device_info.enabledExtensionCount = uint32_t(extensions.size());
    device_info.ppEnabledExtensionNames = extensions.data();
    VKLLM_VK_CHECK(vkCreateDevice(physical_, &device_info, nullptr, &device_));
    volkLoadDevice(device_);
    vkGetDeviceQueue(device_, caps_.compute_queue_family, 0, &queue_);

    VkCommandPoolCreateInfo pool_info{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    pool_info.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    pool_info.queueFamilyIndex = caps_.compute_queue_family;
    VKLLM_VK_CHECK(vkCreateCommandPool(device_, &pool_info, nullptr, &command_pool_));
    if (!caps_.null_hardware) {  // where fence creation fails: nothing is ever submitted there
        VkFenceCreateInfo fence_info{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
        VKLLM_VK_CHECK(vkCreateFence(device_, &fence_info, nullptr, &fence_));
    }

    allocator_ = std::make_unique<Allocator>(*this, physical_);
    pipelines_ = std::make_unique<PipelineCache>(*this);
}

Device::~Device() {
    if (!device_) return;
    if (!caps_.null_hardware) vkDeviceWaitIdle(device_);  // null hardware has no queue to wait on
    pipelines_.reset();
    allocator_.reset();
    if (fence_) vkDestroyFence(device_, fence_, nullptr);
    vkDestroyCommandPool(device_, command_pool_, nullptr);
    vkDestroyDevice(device_, nullptr);
}

VkCommandBuffer Device::allocate_command_buffer() {
    VkCommandBufferAllocateInfo info{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    info.commandPool = command_pool_;
    info.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    info.commandBufferCount = 1;
    VkCommandBuffer command_buffer;
    VKLLM_VK_CHECK(vkAllocateCommandBuffers(device_, &info, &command_buffer));
    return command_buffer;
}

void Device::free_command_buffer(VkCommandBuffer command_buffer) {
    vkFreeCommandBuffers(device_, command_pool_, 1, &command_buffer);
}

void Device::enable_float16_kernels(bool enabled) {
    caps_.float16_kernels = enabled && caps_.float16 && caps_.storage_buffer_16bit;
}

void Device::enable_int8_activations(bool enabled) {
    caps_.int8_activation_matmul = enabled && caps_.integer_dot_product;
}

void Device::submit_and_wait(VkCommandBuffer command_buffer) {
    if (caps_.null_hardware) fail("Vulkan device '{}' is null hardware: nothing can be submitted to it", caps_.name);
    VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    submit.commandBufferCount = 1;
    submit.pCommandBuffers = &command_buffer;
    VKLLM_VK_CHECK(vkQueueSubmit(queue_, 1, &submit, fence_));
    VKLLM_VK_CHECK(vkWaitForFences(device_, 1, &fence_, VK_TRUE, UINT64_MAX));
    VKLLM_VK_CHECK(vkResetFences(device_, 1, &fence_));
}

void Device::wait_idle() { VKLLM_VK_CHECK(vkDeviceWaitIdle(device_)); }

}  // namespace vkllm::gpu
