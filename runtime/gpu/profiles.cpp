#include "gpu/profiles.h"

#include <algorithm>

#include "core/error.h"

namespace vkllm::gpu {
namespace {

constexpr uint64_t KiB = 1024, MiB = 1024 * KiB, GiB = 1024 * MiB;

constexpr VkSubgroupFeatureFlags basic_only = VK_SUBGROUP_FEATURE_BASIC_BIT;
constexpr VkSubgroupFeatureFlags all_subgroup_operations = ~VkSubgroupFeatureFlags(0);
constexpr VkSubgroupFeatureFlags no_clustered = ~VkSubgroupFeatureFlags(VK_SUBGROUP_FEATURE_CLUSTERED_BIT);

// The lower end of each class, as its drivers report the limits (VkPhysicalDeviceLimits, subgroup
// properties, 1.1/1.2 features). Checked against source where Mesa has a driver: panvk's physical
// device (Mali: maxComputeSharedMemorySize 32768 "capped to 32K", maxComputeWorkGroupInvocations the
// GPU's max threads per workgroup, maxBufferSize 1 GiB), freedreno's GPU tables for turnip (Adreno:
// cs_shared_mem_size 32 KiB) and RADV as `RADV_FORCE_FAMILY=navi21 vkllm devices` prints it here; the
// Intel and NVIDIA rows are the figures those vendors' drivers commonly report (vulkan.gpuinfo.org
// lists them per device; it could not be read from this machine, so they are not checked here). A
// profile is a test clamp, not a device database: check a real device with `vkllm devices --json`.
struct Profile {
    const char* name;
    VkPhysicalDeviceType type;  // picks the GPU kernel configurations over lavapipe's CPU ones
    uint32_t shared_memory, invocations;
    uint64_t binding_range, memory_budget;
    VkSubgroupFeatureFlags subgroup_operations;
    bool float16, storage_8bit, integer_dot_product, subgroup_size_control;
    bool cooperative_matrix;  // the class has matrix units reachable through VK_KHR_cooperative_matrix
};

constexpr Profile profiles[] = {
    // Qualcomm's driver on Adreno 6xx/7xx: 32 KiB shared memory, 1024 invocations, subgroups of 64
    // (128 on request), storage bindings of 128 MiB (2^27); fp16 arithmetic, no 8-bit storage on 6xx.
    // Phones share 6-12 GiB of RAM with the system: plan for 3 GiB.
    {"mobile-adreno", VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU, 32 * KiB, 1024, 128 * MiB, 3 * GiB, no_clustered,
     true, false, false, true, false},
    // Arm's driver on Mali Bifrost/Valhall (G52-G78): 32 KiB shared memory, 256-512 invocations
    // (256 taken: Bifrost), subgroups of 8-16, 128 MiB bindings (2^27); shaderFloat16 absent on
    // Bifrost drivers, 8-bit storage present. 3 GiB as for Adreno.
    {"mobile-mali", VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU, 32 * KiB, 256, 128 * MiB, 3 * GiB, no_clustered,
     false, true, false, false, false},
    // Intel Gen9-Xe integrated GPUs (ANV and Intel's Windows driver): 64 KiB shared memory, 1024
    // invocations, subgroups of 8-32, bindings of 1 GiB (2^30) on the Windows driver; fp16, int8,
    // integer dot product; no matrix units before Arc. Memory is the host's: 4 GiB of a laptop's.
    {"intel-igpu", VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU, 64 * KiB, 1024, 1 * GiB, 4 * GiB, all_subgroup_operations,
     true, true, true, true, false},
    // NVIDIA's driver, Turing to Ada: 48 KiB shared memory (49152), 1024 invocations, subgroups of
    // 32, bindings of 4 GiB - 1; an 8 GiB card. Tensor cores through VK_KHR_cooperative_matrix (the
    // H100 reports 16x16x16 f16 x f16 -> f32, ../shared/docs/gpu-h100.md), which a profile cannot
    // give a device without them: lavapipe keeps none.
    {"nvidia", VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU, 48 * KiB, 1024, 4 * GiB - 1, 8 * GiB, all_subgroup_operations,
     true, true, true, true, true},
    // RADV and AMD's driver on RDNA (RADV_FORCE_FAMILY=navi21 here reports these): 64 KiB shared
    // memory, 1024 invocations, subgroups of 64 (32 on request), bindings of 4 GiB - 1; an 8 GiB card.
    // Matrix units (WMMA) only from RDNA3 on, so not in the class.
    {"amd", VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU, 64 * KiB, 1024, 4 * GiB - 1, 8 * GiB, all_subgroup_operations, true,
     true, true, true, false},
    // The Vulkan 1.1 specification's required minimums ("Required Limits" table): 16 KiB shared
    // memory, 128 invocations (128 x 128 x 64), 2^27 bytes of storage binding, only basic subgroup
    // operations in compute, no fp16 arithmetic, no 8-bit storage, no subgroup size control.
    {"vulkan-1.1-minimum", VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU, 16 * KiB, 128, 128 * MiB, 1 * GiB, basic_only,
     false, false, false, false, false},
};

}  // namespace

std::vector<std::string> profile_names() {
    std::vector<std::string> names;
    for (const Profile& profile : profiles) names.emplace_back(profile.name);
    return names;
}

void apply_profile(Capabilities& caps, std::string_view name) {
    auto found = std::ranges::find_if(profiles, [&](const Profile& p) { return name == p.name; });
    if (found == std::end(profiles)) {
        std::string known;
        for (const std::string& profile : profile_names()) known += (known.empty() ? "" : ", ") + profile;
        fail("VKLLM_DEVICE_PROFILE={}: no such device profile (known: {})", name, known);
    }
    const Profile& p = *found;
    caps.profile = p.name;
    if (caps.type == VK_PHYSICAL_DEVICE_TYPE_CPU) caps.type = p.type;
    caps.max_shared_memory = std::min(caps.max_shared_memory, p.shared_memory);
    caps.max_workgroup_invocations = std::min(caps.max_workgroup_invocations, p.invocations);
    for (uint32_t& size : caps.max_workgroup_size) size = std::min(size, p.invocations);
    caps.max_workgroup_size[2] = std::min(caps.max_workgroup_size[2], 64u);
    caps.max_storage_buffer_range = std::min(caps.max_storage_buffer_range, p.binding_range);
    caps.memory_budget = std::min(caps.memory_budget, p.memory_budget);
    caps.subgroup_operations &= p.subgroup_operations;
    caps.float16 = caps.float16 && p.float16;
    caps.int8 = caps.int8 && p.storage_8bit;
    caps.storage_buffer_8bit = caps.storage_buffer_8bit && p.storage_8bit;
    caps.integer_dot_product = caps.integer_dot_product && p.integer_dot_product;
    caps.integer_dot_product_accelerated = caps.integer_dot_product_accelerated && p.integer_dot_product;
    if (!p.cooperative_matrix) {
        caps.cooperative_matrix = false;
        caps.cooperative_matrix_shapes.clear();
    }
    if (!p.subgroup_size_control) {
        caps.subgroup_size_control = caps.compute_full_subgroups = false;
        caps.min_subgroup_size = caps.max_subgroup_size = caps.subgroup_size;
    }
}

}  // namespace vkllm::gpu
