#include "gpu/capabilities.h"

#include <cstring>
#include <fmt/format.h>
#include <unistd.h>

#include "core/env.h"
#include "gpu/check.h"
#include "gpu/cooperative_matrix_khr.h"
#include "gpu/instance.h"
#include "gpu/profiles.h"
#include "gpu/shaders.h"

namespace vkllm::gpu {
namespace {

bool has_extension(const std::vector<VkExtensionProperties>& extensions, const char* name) {
    for (const auto& extension : extensions)
        if (std::strcmp(extension.extensionName, name) == 0) return true;
    return false;
}

std::vector<VkExtensionProperties> device_extensions(VkPhysicalDevice device) {
    uint32_t count = 0;
    VKLLM_VK_CHECK(vkEnumerateDeviceExtensionProperties(device, nullptr, &count, nullptr));
    std::vector<VkExtensionProperties> extensions(count);
    VKLLM_VK_CHECK(vkEnumerateDeviceExtensionProperties(device, nullptr, &count, extensions.data()));
    return extensions;
}

void probe_queues(VkPhysicalDevice device, Capabilities& caps) {
    uint32_t count = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(device, &count, nullptr);
    std::vector<VkQueueFamilyProperties> families(count);
    vkGetPhysicalDeviceQueueFamilyProperties(device, &count, families.data());
    // Prefer a compute queue family that also does graphics: it is the "main" queue on most GPUs
    // and the only one guaranteed to support timestamps when compute-only families don't.
    for (uint32_t i = 0; i < count; ++i) {
        if (!(families[i].queueFlags & VK_QUEUE_COMPUTE_BIT)) continue;
        bool better = caps.compute_queue_family == UINT32_MAX ||
                      (families[i].queueFlags & VK_QUEUE_GRAPHICS_BIT);
        if (!better) continue;
        caps.compute_queue_family = i;
        caps.timestamp_valid_bits = families[i].timestampValidBits;
        if (families[i].queueFlags & VK_QUEUE_GRAPHICS_BIT) break;
    }
}

void probe_memory(VkPhysicalDevice device, Capabilities& caps) {
    VkPhysicalDeviceMemoryProperties memory;
    vkGetPhysicalDeviceMemoryProperties(device, &memory);
    for (uint32_t i = 0; i < memory.memoryHeapCount; ++i)
        caps.heaps.push_back({memory.memoryHeaps[i].size,
                              (memory.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) != 0});
    for (uint32_t i = 0; i < memory.memoryTypeCount; ++i)
        caps.memory_types.push_back({memory.memoryTypes[i].heapIndex, memory.memoryTypes[i].propertyFlags});
    caps.null_hardware = caps.heaps.empty();
    if (caps.type == VK_PHYSICAL_DEVICE_TYPE_CPU) {
        caps.memory_budget = uint64_t(sysconf(_SC_PHYS_PAGES)) * uint64_t(sysconf(_SC_PAGE_SIZE));
        return;
    }
    for (const auto& heap : caps.heaps)
        if (heap.device_local) caps.memory_budget += heap.size;
}

// The products of the device's cooperative-matrix units. The entry point is the instance's
// (vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR), not one volk loads.
std::vector<CooperativeMatrixShape> cooperative_matrix_shapes(VkPhysicalDevice device) {
    auto get = reinterpret_cast<PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR>(
        vkGetInstanceProcAddr(volkGetLoadedInstance(), "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR"));
    if (!get) return {};
    uint32_t count = 0;
    VKLLM_VK_CHECK(get(device, &count, nullptr));
    std::vector<VkCooperativeMatrixPropertiesKHR> properties(
        count, VkCooperativeMatrixPropertiesKHR{VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR});
    VKLLM_VK_CHECK(get(device, &count, properties.data()));
    std::vector<CooperativeMatrixShape> shapes;
    for (const auto& p : properties)
        shapes.push_back({.m = p.MSize, .n = p.NSize, .k = p.KSize, .a_type = uint32_t(p.AType),
                          .b_type = uint32_t(p.BType), .c_type = uint32_t(p.CType),
                          .result_type = uint32_t(p.ResultType), .scope = uint32_t(p.scope),
                          .saturating = p.saturatingAccumulation != VK_FALSE});
    return shapes;
}

// Whether the cooperative-matrix kernels can run on the device: see Capabilities::coopmat_kernels.
bool coopmat_kernels_fit(const Capabilities& caps) {
    const bool fixed_subgroups = caps.min_subgroup_size == caps.max_subgroup_size || caps.subgroup_size_control;
    return caps.cooperative_matrix && caps.coopmat_f16_shape() && caps.float16 && caps.vulkan_memory_model &&
           fixed_subgroups && shaders::built("matmul_coopmat_q4_0");
}

// The compute units a driver reports through a vendor extension, or 0.
uint32_t probe_compute_units(VkPhysicalDevice device, const std::vector<VkExtensionProperties>& extensions) {
    VkPhysicalDeviceShaderSMBuiltinsPropertiesNV nvidia{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_SM_BUILTINS_PROPERTIES_NV};
    VkPhysicalDeviceShaderCorePropertiesAMD amd{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_CORE_PROPERTIES_AMD};
    VkPhysicalDeviceShaderCoreProperties2AMD amd2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_CORE_PROPERTIES_2_AMD};
    VkPhysicalDeviceShaderCoreBuiltinsPropertiesARM arm{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_CORE_BUILTINS_PROPERTIES_ARM};
    VkPhysicalDeviceProperties2 properties{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
    void** next = &properties.pNext;
    auto chain = [&](const char* extension, auto& properties_struct) {
        if (!has_extension(extensions, extension)) return false;
        *next = &properties_struct;
        next = &properties_struct.pNext;
        return true;
    };
    const bool has_nvidia = chain(VK_NV_SHADER_SM_BUILTINS_EXTENSION_NAME, nvidia);
    const bool has_amd = chain(VK_AMD_SHADER_CORE_PROPERTIES_EXTENSION_NAME, amd);
    const bool has_amd2 = chain(VK_AMD_SHADER_CORE_PROPERTIES_2_EXTENSION_NAME, amd2);
    const bool has_arm = chain(VK_ARM_SHADER_CORE_BUILTINS_EXTENSION_NAME, arm);
    if (!properties.pNext) return 0;
    vkGetPhysicalDeviceProperties2(device, &properties);
    if (has_nvidia) return nvidia.shaderSMCount;
    if (has_amd2 && amd2.activeComputeUnitCount) return amd2.activeComputeUnitCount;
    if (has_amd) return amd.shaderEngineCount * amd.shaderArraysPerEngineCount * amd.computeUnitsPerShaderArray;
    if (has_arm) return arm.shaderCoreCount;
    return 0;
}

}  // namespace

Capabilities probe(VkPhysicalDevice device) {
    Capabilities caps;
    auto extensions = device_extensions(device);
    caps.push_descriptor = has_extension(extensions, VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);
    const bool has_cooperative_matrix = has_extension(extensions, VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME);
    caps.pipeline_executable_properties =
        has_extension(extensions, VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
    bool has_dot = has_extension(extensions, VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME);

    VkPhysicalDeviceProperties base;
    vkGetPhysicalDeviceProperties(device, &base);
    bool vulkan13 = base.apiVersion >= VK_API_VERSION_1_3;

    VkPhysicalDeviceSubgroupProperties subgroup{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
    VkPhysicalDeviceSubgroupSizeControlProperties size_control{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES};
    VkPhysicalDeviceMaintenance4Properties maintenance4{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_4_PROPERTIES};
    VkPhysicalDeviceDriverProperties driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
    VkPhysicalDeviceIDProperties ids{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES};
    VkPhysicalDeviceMaintenance3Properties maintenance3{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
    VkPhysicalDeviceShaderIntegerDotProductProperties dot{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_PROPERTIES};
    VkPhysicalDeviceCooperativeMatrixPropertiesKHR matrix_stages{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_PROPERTIES_KHR};
    VkPhysicalDeviceProperties2 properties{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
    properties.pNext = &subgroup;
    subgroup.pNext = &driver;
    driver.pNext = &ids;
    ids.pNext = &maintenance3;
    if (vulkan13) {
        maintenance3.pNext = &size_control;
        size_control.pNext = &maintenance4;
        if (has_dot) maintenance4.pNext = &dot;
    }
    // Querying its structures uses the extension (an older validation layer's gap for it is set aside).
    if (has_cooperative_matrix) {
        note_extension_in_use(VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME);
        matrix_stages.pNext = properties.pNext;
        properties.pNext = &matrix_stages;
    }
    vkGetPhysicalDeviceProperties2(device, &properties);

    VkPhysicalDeviceVulkan11Features features11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
    VkPhysicalDeviceVulkan12Features features12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    VkPhysicalDeviceVulkan13Features features13{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES};
    VkPhysicalDeviceCooperativeMatrixFeaturesKHR matrix_features{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR};
    VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    bool vulkan12 = base.apiVersion >= VK_API_VERSION_1_2;
    if (vulkan12) {
        features.pNext = &features11;
        features11.pNext = &features12;
        if (vulkan13) features12.pNext = &features13;
    }
    if (has_cooperative_matrix) {
        matrix_features.pNext = features.pNext;
        features.pNext = &matrix_features;
    }
    vkGetPhysicalDeviceFeatures2(device, &features);

    const VkPhysicalDeviceLimits& limits = base.limits;
    caps.name = base.deviceName;
    caps.type = base.deviceType;
    caps.vendor_id = base.vendorID;
    caps.device_id = base.deviceID;
    caps.api_version = base.apiVersion;
    caps.driver_version = base.driverVersion;
    caps.driver_name = driver.driverName;
    caps.driver_info = driver.driverInfo;
    std::memcpy(caps.device_uuid.data(), ids.deviceUUID, VK_UUID_SIZE);
    std::memcpy(caps.pipeline_cache_uuid.data(), base.pipelineCacheUUID, VK_UUID_SIZE);

    caps.int16 = features.features.shaderInt16;
    caps.int64 = features.features.shaderInt64;
    caps.float16 = vulkan12 && features12.shaderFloat16;
    caps.int8 = vulkan12 && features12.shaderInt8;
    caps.storage_buffer_16bit = vulkan12 && features11.storageBuffer16BitAccess;
    caps.push_constant_16bit = vulkan12 && features11.storagePushConstant16;
    caps.storage_buffer_8bit = vulkan12 && features12.storageBuffer8BitAccess;
    caps.timeline_semaphore = vulkan12 && features12.timelineSemaphore;
    caps.buffer_device_address = vulkan12 && features12.bufferDeviceAddress;
    caps.subgroup_size_control = vulkan13 && features13.subgroupSizeControl;
    caps.compute_full_subgroups = vulkan13 && features13.computeFullSubgroups;
    caps.maintenance4 = vulkan13 && features13.maintenance4;
    caps.synchronization2 = vulkan13 && features13.synchronization2;
    caps.integer_dot_product = vulkan13 && features13.shaderIntegerDotProduct;
    caps.integer_dot_product_accelerated =
        caps.integer_dot_product && dot.integerDotProduct4x8BitPackedSignedAccelerated;
    caps.vulkan_memory_model = vulkan12 && features12.vulkanMemoryModel && features12.vulkanMemoryModelDeviceScope;
    caps.cooperative_matrix = has_cooperative_matrix && matrix_features.cooperativeMatrix &&
                              (matrix_stages.cooperativeMatrixSupportedStages & VK_SHADER_STAGE_COMPUTE_BIT);
    if (caps.cooperative_matrix) caps.cooperative_matrix_shapes = cooperative_matrix_shapes(device);

    caps.subgroup_size = subgroup.subgroupSize;
    caps.subgroup_operations =
        (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) ? subgroup.supportedOperations : 0;
    caps.min_subgroup_size = caps.subgroup_size_control ? size_control.minSubgroupSize : subgroup.subgroupSize;
    caps.max_subgroup_size = caps.subgroup_size_control ? size_control.maxSubgroupSize : subgroup.subgroupSize;

    caps.max_shared_memory = limits.maxComputeSharedMemorySize;
    caps.max_workgroup_invocations = limits.maxComputeWorkGroupInvocations;
    caps.max_push_constants = limits.maxPushConstantsSize;
    for (int i = 0; i < 3; ++i) {
        caps.max_workgroup_size[i] = limits.maxComputeWorkGroupSize[i];
        caps.max_workgroup_count[i] = limits.maxComputeWorkGroupCount[i];
    }
    caps.max_storage_buffer_range = limits.maxStorageBufferRange;
    caps.max_texel_buffer_elements = limits.maxTexelBufferElements;
    caps.min_texel_buffer_offset_alignment = limits.minTexelBufferOffsetAlignment;
    caps.max_memory_allocation_size = maintenance3.maxMemoryAllocationSize;
    // Without maintenance4 there is no stated limit; a buffer cannot exceed one allocation anyway.
    caps.max_buffer_size = caps.maintenance4 ? maintenance4.maxBufferSize : caps.max_memory_allocation_size;
    caps.min_storage_buffer_offset_alignment = limits.minStorageBufferOffsetAlignment;
    caps.non_coherent_atom_size = limits.nonCoherentAtomSize;

    caps.compute_units = probe_compute_units(device, extensions);

    caps.timestamp_period_ns = limits.timestampPeriod;
    probe_queues(device, caps);
    caps.compute_timestamps = limits.timestampComputeAndGraphics || caps.timestamp_valid_bits > 0;
    probe_memory(device, caps);
    apply_switches(caps);
    return caps;
}

void apply_switches(Capabilities& caps) {
    if (auto profile = env::get("VKLLM_DEVICE_PROFILE"); profile && !profile->empty()) apply_profile(caps, *profile);
    caps.float16_kernels = caps.float16 && caps.storage_buffer_16bit && !env::flag("VKLLM_DISABLE_F16");
    if (auto forced = env::get("VKLLM_TEXEL_READS"); forced && !forced->empty())
        caps.texel_buffer_reads = *forced != "0";
    else
        caps.texel_buffer_reads = caps.type == VK_PHYSICAL_DEVICE_TYPE_CPU;
    if (auto forced = env::get("VKLLM_INT8_ACTIVATIONS"); forced && !forced->empty())
        caps.int8_activation_matmul = *forced != "0" && caps.integer_dot_product;
    else
        caps.int8_activation_matmul = caps.integer_dot_product_accelerated;
    // On by default where the device reports the products (an H200 ran them correct and faster on every
    // prompt); VKLLM_COOPMAT=0 turns them off.
    caps.cooperative_matrix_kernels = env::get("VKLLM_COOPMAT") != "0" && coopmat_kernels_fit(caps);
    caps.force_staging = env::flag("VKLLM_FORCE_STAGING");
    // A small "discrete GPU" out of any device: weights beyond it go to host memory (model/memory_plan.h).
    if (auto limit = env::bytes("VKLLM_DEVICE_LOCAL_LIMIT")) caps.memory_budget = std::min(caps.memory_budget, *limit);
}

std::optional<CooperativeMatrixShape> Capabilities::coopmat_f16_shape() const {
    std::optional<CooperativeMatrixShape> best;
    for (const CooperativeMatrixShape& shape : cooperative_matrix_shapes) {
        const bool sizes = shape.m % 4 == 0 && shape.m > 0 && shape.m <= 32 && shape.n % 4 == 0 && shape.n > 0 &&
                           shape.n <= 32 && shape.k % 4 == 0 && shape.k > 0 && 32 % shape.k == 0;
        if (!shape.f16_into_f32() || !sizes) continue;
        const uint32_t area = shape.m * shape.n;
        if (!best || area > best->m * best->n || (area == best->m * best->n && shape.k > best->k)) best = shape;
    }
    return best;
}

bool CooperativeMatrixShape::f16_into_f32() const {
    return a_type == VK_COMPONENT_TYPE_FLOAT16_KHR && b_type == VK_COMPONENT_TYPE_FLOAT16_KHR &&
           c_type == VK_COMPONENT_TYPE_FLOAT32_KHR && result_type == VK_COMPONENT_TYPE_FLOAT32_KHR &&
           scope == VK_SCOPE_SUBGROUP_KHR && !saturating;
}

std::string CooperativeMatrixShape::text() const {
    auto type = [](uint32_t t) -> std::string {
        static constexpr const char* names[] = {"f16", "f32", "f64", "s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64"};
        return t < std::size(names) ? names[t] : fmt::format("type {}", t);
    };
    std::string out = fmt::format("{}x{}x{} {} x {} + {} -> {}", m, n, k, type(a_type), type(b_type), type(c_type),
                                  type(result_type));
    if (saturating) out += " saturating";
    if (scope != VK_SCOPE_SUBGROUP_KHR)
        out += scope == VK_SCOPE_WORKGROUP_KHR ? " (workgroup)" : fmt::format(" (scope {})", scope);
    return out;
}

bool Capabilities::unified_memory() const {
    constexpr VkMemoryPropertyFlags wanted =
        VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT | VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT;
    for (const auto& memory_type : memory_types)
        if ((memory_type.flags & wanted) == wanted) return true;
    return false;
}

std::string Capabilities::type_name() const {
    switch (type) {
        case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete GPU";
        case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated GPU";
        case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual GPU";
        case VK_PHYSICAL_DEVICE_TYPE_CPU: return "CPU";
        default: return "other";
    }
}

std::string Capabilities::driver_version_string() const {
    // NVIDIA packs 10.8.8.6 bits; everyone else uses the standard Vulkan encoding.
    if (vendor_id == 0x10de)
        return fmt::format("{}.{}.{}.{}", driver_version >> 22, (driver_version >> 14) & 0xff,
                           (driver_version >> 6) & 0xff, driver_version & 0x3f);
    return fmt::format("{}.{}.{}", VK_API_VERSION_MAJOR(driver_version),
                       VK_API_VERSION_MINOR(driver_version), VK_API_VERSION_PATCH(driver_version));
}

std::string subgroup_operation_names(VkSubgroupFeatureFlags operations) {
    static constexpr std::pair<VkSubgroupFeatureFlagBits, const char*> names[] = {
        {VK_SUBGROUP_FEATURE_BASIC_BIT, "basic"},
        {VK_SUBGROUP_FEATURE_VOTE_BIT, "vote"},
        {VK_SUBGROUP_FEATURE_ARITHMETIC_BIT, "arithmetic"},
        {VK_SUBGROUP_FEATURE_BALLOT_BIT, "ballot"},
        {VK_SUBGROUP_FEATURE_SHUFFLE_BIT, "shuffle"},
        {VK_SUBGROUP_FEATURE_SHUFFLE_RELATIVE_BIT, "shuffle_relative"},
        {VK_SUBGROUP_FEATURE_CLUSTERED_BIT, "clustered"},
        {VK_SUBGROUP_FEATURE_QUAD_BIT, "quad"},
    };
    std::string out;
    for (auto [bit, name] : names) {
        if (!(operations & bit)) continue;
        if (!out.empty()) out += ' ';
        out += name;
    }
    return out;
}

}  // namespace vkllm::gpu
