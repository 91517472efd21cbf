#include "gpu/instance.h"

#include <atomic>
#include <cstdio>
#include <cstring>

#include "core/env.h"
#include "gpu/check.h"

namespace vkllm::gpu {
namespace {

std::atomic<uint64_t> validation_messages{0};

VKAPI_ATTR VkBool32 VKAPI_CALL on_validation_message(
    VkDebugUtilsMessageSeverityFlagBitsEXT severity, VkDebugUtilsMessageTypeFlagsEXT,
    const VkDebugUtilsMessengerCallbackDataEXT* data, void*) {
    if (severity < VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) return VK_FALSE;
    validation_messages.fetch_add(1);
    std::fprintf(stderr, "vkllm: validation: %s\n", data->pMessage);
    return VK_FALSE;
}

bool has_layer(const char* name) {
    uint32_t count = 0;
    VKLLM_VK_CHECK(vkEnumerateInstanceLayerProperties(&count, nullptr));
    std::vector<VkLayerProperties> layers(count);
    VKLLM_VK_CHECK(vkEnumerateInstanceLayerProperties(&count, layers.data()));
    for (const auto& layer : layers)
        if (std::strcmp(layer.layerName, name) == 0) return true;
    return false;
}

bool has_instance_extension(const char* name) {
    uint32_t count = 0;
    VKLLM_VK_CHECK(vkEnumerateInstanceExtensionProperties(nullptr, &count, nullptr));
    std::vector<VkExtensionProperties> extensions(count);
    VKLLM_VK_CHECK(vkEnumerateInstanceExtensionProperties(nullptr, &count, extensions.data()));
    for (const auto& extension : extensions)
        if (std::strcmp(extension.extensionName, name) == 0) return true;
    return false;
}

}  // namespace

uint64_t validation_message_count() { return validation_messages.load(); }

Instance::Instance(InstanceOptions options) {
    if (volkInitialize() != VK_SUCCESS)
        fail("no Vulkan loader found (libvulkan.so.1); install a Vulkan driver and loader, "
             "e.g. apt-get install libvulkan1 mesa-vulkan-drivers");
    if (volkGetInstanceVersion() < VK_API_VERSION_1_1)
        fail("the Vulkan loader supports only Vulkan 1.0; vkllm needs Vulkan 1.1 or newer");

    const char* validation_layer = "VK_LAYER_KHRONOS_validation";
    bool validation = options.validation || env::flag("VKLLM_VALIDATION");
    if (validation && !has_layer(validation_layer))
        fail("validation was asked for but {} is not installed (apt-get install vulkan-validationlayers)",
             validation_layer);

    std::vector<const char*> extensions;
    std::vector<const char*> layers;
    if (validation) {
        layers.push_back(validation_layer);
        extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
    }
    VkInstanceCreateFlags flags = 0;
    if (has_instance_extension(VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME)) {
        extensions.push_back(VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME);
        flags |= VK_INSTANCE_CREATE_ENUMERATE_PORTABILITY_BIT_KHR;
    }

    // Synchronization validation is off by default in the layer; vkllm's tests depend on it.
    VkValidationFeatureEnableEXT enabled_features[] = {
        VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
    VkValidationFeaturesEXT validation_features{VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT};
    validation_features.enabledValidationFeatureCount = 1;
    validation_features.pEnabledValidationFeatures = enabled_features;

    VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
    app.pApplicationName = "vkllm";
    app.pEngineName = "vkllm";
    app.apiVersion = VK_API_VERSION_1_3 <= volkGetInstanceVersion() ? VK_API_VERSION_1_3 : VK_API_VERSION_1_1;

    VkInstanceCreateInfo info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
    info.pNext = validation ? &validation_features : nullptr;
    info.flags = flags;
    info.pApplicationInfo = &app;
    info.enabledLayerCount = uint32_t(layers.size());
    info.ppEnabledLayerNames = layers.data();
    info.enabledExtensionCount = uint32_t(extensions.size());
    info.ppEnabledExtensionNames = extensions.data();
    VkResult result = vkCreateInstance(&info, nullptr, &instance_);
    // The loader answers this when it finds no driver at all.
    if (result == VK_ERROR_INCOMPATIBLE_DRIVER)
        fail("no Vulkan driver found, so no device; install one (for a CPU device: apt-get install mesa-vulkan-drivers)");
    check(result, "vkCreateInstance");
    volkLoadInstanceOnly(instance_);

    if (validation) {
        VkDebugUtilsMessengerCreateInfoEXT messenger{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
        messenger.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                                    VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
        messenger.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                                VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                                VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
        messenger.pfnUserCallback = on_validation_message;
        VKLLM_VK_CHECK(vkCreateDebugUtilsMessengerEXT(instance_, &messenger, nullptr, &messenger_));
    }

    uint32_t count = 0;
    VKLLM_VK_CHECK(vkEnumeratePhysicalDevices(instance_, &count, nullptr));
    physical_devices_.resize(count);
    VKLLM_VK_CHECK(vkEnumeratePhysicalDevices(instance_, &count, physical_devices_.data()));
    physical_devices_.resize(count);
}

Instance::~Instance() {
    if (messenger_) vkDestroyDebugUtilsMessengerEXT(instance_, messenger_, nullptr);
    if (instance_) vkDestroyInstance(instance_, nullptr);
}

}  // namespace vkllm::gpu
