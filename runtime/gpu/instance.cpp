#include "gpu/instance.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "core/env.h"
#include "gpu/check.h"
#include "gpu/cooperative_matrix_khr.h"

namespace vkllm::gpu {
namespace {

std::atomic<uint64_t> validation_messages{0};
std::atomic<uint64_t> messages_set_aside{0};
std::atomic<uint32_t> layer_version{0};  // the enabled validation layer's spec version
std::mutex extensions_mutex;
std::vector<std::string> extensions_in_use;

// What a layer that predates an extension cannot know of it: its structure types and its SPIR-V
// capability.
struct ExtensionSubjects {
    std::string_view extension;
    uint32_t introduced;  // the Vulkan header that added it
    std::array<int64_t, 3> structure_types;
    int64_t spirv_capability;
};
constexpr ExtensionSubjects known_extensions[] = {
    {VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME, VK_MAKE_API_VERSION(0, 1, 3, 255),
     {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR, VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR,
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_PROPERTIES_KHR},
     6022 /* CooperativeMatrixKHR */},
};

// The messages a layer gives what it does not know, as 1.3.239 words them: a pNext chain's "unknown
// VkStructureType (N);" and spirv-val's "Invalid capability operand: N" at the end of the message.
constexpr std::string_view unknown_structure_ids[] = {"VUID-VkDeviceCreateInfo-pNext-pNext",
                                                      "VUID-VkPhysicalDeviceFeatures2-pNext-pNext",
                                                      "VUID-VkPhysicalDeviceProperties2-pNext-pNext"};
constexpr std::string_view unknown_capability_id = "UNASSIGNED-CoreValidation-Shader-InconsistentSpirv";

// The whole number that follows `before` in `text` and ends at `after` (empty: the end of the text).
std::optional<int64_t> number_between(std::string_view text, std::string_view before, std::string_view after) {
    const size_t at = text.find(before);
    if (at == std::string_view::npos) return std::nullopt;
    const std::string_view rest = text.substr(at + before.size());
    int64_t value = 0;
    const auto [end, error] = std::from_chars(rest.data(), rest.data() + rest.size(), value);
    if (error != std::errc() || end == rest.data()) return std::nullopt;
    const std::string_view tail(end, rest.data() + rest.size() - end);
    if (after.empty() ? !tail.empty() : !tail.starts_with(after)) return std::nullopt;
    return value;
}

VKAPI_ATTR VkBool32 VKAPI_CALL on_validation_message(
    VkDebugUtilsMessageSeverityFlagBitsEXT severity, VkDebugUtilsMessageTypeFlagsEXT,
    const VkDebugUtilsMessengerCallbackDataEXT* data, void*) {
    if (severity < VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) return VK_FALSE;
    {
        std::lock_guard lock(extensions_mutex);
        if (layer_gap_extension(data->pMessageIdName ? data->pMessageIdName : "", data->pMessage, layer_version.load(),
                                extensions_in_use)) {
            messages_set_aside.fetch_add(1);
            return VK_FALSE;
        }
    }
    validation_messages.fetch_add(1);
    std::fprintf(stderr, "vkllm: validation: %s\n", data->pMessage);
    return VK_FALSE;
}

// The enabled validation layer's spec version (0 where it is not installed).
uint32_t layer_spec_version(const char* name) {
    uint32_t count = 0;
    VKLLM_VK_CHECK(vkEnumerateInstanceLayerProperties(&count, nullptr));
    std::vector<VkLayerProperties> layers(count);
    VKLLM_VK_CHECK(vkEnumerateInstanceLayerProperties(&count, layers.data()));
    for (const auto& layer : layers)
        if (std::strcmp(layer.layerName, name) == 0) return layer.specVersion;
    return 0;
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
uint64_t validation_messages_set_aside() { return messages_set_aside.load(); }

std::optional<std::string_view> layer_gap_extension(std::string_view id, std::string_view text, uint32_t layer_version,
                                                    std::span<const std::string> in_use) {
    const bool unknown_structure = std::ranges::find(unknown_structure_ids, id) != std::end(unknown_structure_ids);
    if (!unknown_structure && id != unknown_capability_id) return std::nullopt;
    const std::optional<int64_t> subject = unknown_structure
                                               ? number_between(text, "unknown VkStructureType (", ");")
                                               : number_between(text, "SPIR-V module not valid: Invalid capability operand: ", "");
    if (!subject) return std::nullopt;
    for (const ExtensionSubjects& known : known_extensions) {
        const bool known_subject = unknown_structure ? std::ranges::find(known.structure_types, *subject) !=
                                                           known.structure_types.end()
                                                     : *subject == known.spirv_capability;
        if (known_subject && layer_version < known.introduced && std::ranges::find(in_use, known.extension) != in_use.end())
            return known.extension;
    }
    return std::nullopt;
}

void note_extension_in_use(std::string_view extension) {
    std::lock_guard lock(extensions_mutex);
    if (std::ranges::find(extensions_in_use, extension) == extensions_in_use.end())
        extensions_in_use.emplace_back(extension);
}

Instance::Instance(InstanceOptions options) {
    if (volkInitialize() != VK_SUCCESS)
        fail("no Vulkan loader found (libvulkan.so.1); install a Vulkan driver and loader, "
             "e.g. apt-get install libvulkan1 mesa-vulkan-drivers");
    if (volkGetInstanceVersion() < VK_API_VERSION_1_1)
        fail("the Vulkan loader supports only Vulkan 1.0; vkllm needs Vulkan 1.1 or newer");

    const char* validation_layer = "VK_LAYER_KHRONOS_validation";
    bool validation = options.validation || env::flag("VKLLM_VALIDATION");
    if (validation) layer_version = layer_spec_version(validation_layer);
    if (validation && layer_version == 0)
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
    if (messenger_) {
        vkDestroyDebugUtilsMessengerEXT(instance_, messenger_, nullptr);
        if (uint64_t set_aside = messages_set_aside.load())
            std::fprintf(stderr,
                         "vkllm: validation: %llu messages set aside since the process started: the layer (%u.%u.%u) "
                         "predates extensions in use\n",
                         (unsigned long long)set_aside, VK_API_VERSION_MAJOR(layer_version.load()),
                         VK_API_VERSION_MINOR(layer_version.load()), VK_API_VERSION_PATCH(layer_version.load()));
    }
    if (instance_) vkDestroyInstance(instance_, nullptr);
}

}  // namespace vkllm::gpu
