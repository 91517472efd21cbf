#pragma once
// What a physical device can do, read once when the device is probed, with the VKLLM_* switches that
// shape it (VKLLM_DEVICE_PROFILE, VKLLM_DISABLE_F16, VKLLM_TEXEL_READS, VKLLM_INT8_ACTIVATIONS,
// VKLLM_COOPMAT) applied then, never again per call. These facts choose shader variants: every fp16 path has an
// fp32 fallback.
#include <volk.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace vkllm::gpu {

struct MemoryHeapInfo {
    uint64_t size;
    bool device_local;
};

struct MemoryTypeInfo {
    uint32_t heap;
    VkMemoryPropertyFlags flags;
};

// A product the device's cooperative-matrix units compute (VkCooperativeMatrixPropertiesKHR): an
// M x K matrix of a_type times a K x N one of b_type, plus an M x N one of c_type, into result_type
// (VkComponentTypeKHR: 0 f16, 1 f32, 3 int8, 5 int32, ...), held by one subgroup where scope is 3.
struct CooperativeMatrixShape {
    uint32_t m = 0, n = 0, k = 0;
    uint32_t a_type = 0, b_type = 0, c_type = 0, result_type = 0;
    uint32_t scope = 0;
    bool saturating = false;

    // f16 x f16 + f32 -> f32 by one subgroup, not saturating: the products vkllm's kernels take.
    bool f16_into_f32() const;
    // "16x16x16 f16 x f16 + f32 -> f32" (M x N x K, then the types), " (workgroup)" and the like for
    // other scopes.
    std::string text() const;
    bool operator==(const CooperativeMatrixShape&) const = default;
};

struct Capabilities {
    // identity
    std::string name;
    std::string driver_name, driver_info;
    VkPhysicalDeviceType type = VK_PHYSICAL_DEVICE_TYPE_OTHER;
    uint32_t vendor_id = 0, device_id = 0, api_version = 0, driver_version = 0;
    std::array<uint8_t, VK_UUID_SIZE> device_uuid{}, pipeline_cache_uuid{};

    // arithmetic and storage types
    bool float16 = false, int8 = false, int16 = false, int64 = false;
    bool storage_buffer_16bit = false, storage_buffer_8bit = false, push_constant_16bit = false;
    bool integer_dot_product = false, integer_dot_product_accelerated = false;
    // VK_KHR_cooperative_matrix in compute shaders, and the products it reports.
    bool cooperative_matrix = false;
    std::vector<CooperativeMatrixShape> cooperative_matrix_shapes;
    // The memory model cooperative-matrix shaders are written in, with Device scope: once the model is
    // on, every shader's Device-scope atomic (kv_write's) needs vulkanMemoryModelDeviceScope.
    bool vulkan_memory_model = false;

    // subgroups
    uint32_t subgroup_size = 0, min_subgroup_size = 0, max_subgroup_size = 0;
    VkSubgroupFeatureFlags subgroup_operations = 0;  // in compute shaders
    bool subgroup_size_control = false, compute_full_subgroups = false;

    // Compute units (NVIDIA's SMs, AMD's CUs, Arm's shader cores) where the driver reports them through
    // VK_NV_shader_sm_builtins, VK_AMD_shader_core_properties(2) or VK_ARM_shader_core_builtins; 0 where
    // it does not (lavapipe, Intel). Kernels that split work to fill the device size the split by it.
    uint32_t compute_units = 0;

    // limits
    uint32_t max_shared_memory = 0, max_workgroup_invocations = 0, max_push_constants = 0;
    std::array<uint32_t, 3> max_workgroup_size{}, max_workgroup_count{};
    uint64_t max_storage_buffer_range = 0, max_memory_allocation_size = 0, max_buffer_size = 0;
    uint64_t min_storage_buffer_offset_alignment = 0, non_coherent_atom_size = 0;
    uint64_t max_texel_buffer_elements = 0, min_texel_buffer_offset_alignment = 0;
    bool maintenance4 = false, synchronization2 = false, timeline_semaphore = false;
    bool push_descriptor = false, buffer_device_address = false;
    bool pipeline_executable_properties = false;  // the compiler's statistics per pipeline

    // timing
    bool compute_timestamps = false;
    uint32_t timestamp_valid_bits = 0;
    float timestamp_period_ns = 0;

    // memory
    std::vector<MemoryHeapInfo> heaps;
    std::vector<MemoryTypeInfo> memory_types;
    uint32_t compute_queue_family = UINT32_MAX;
    // Memory vkllm may plan to use: the device-local heaps, or the host's RAM for a CPU device
    // (lavapipe reports a heap far smaller than what it can allocate); a profile or
    // VKLLM_DEVICE_LOCAL_LIMIT (a byte count: 512M, 2G) may lower it.
    uint64_t memory_budget = 0;
    // A driver that compiles but has no hardware behind it (RADV_FORCE_FAMILY's "Null hardware"):
    // no memory heaps, nothing can be submitted. Only `vkllm shaders` opens one, on request.
    bool null_hardware = false;

    // Choices made once from the facts above and the switches (see apply_switches).
    bool float16_kernels = false;     // fp16 arithmetic usable and not disabled by VKLLM_DISABLE_F16
    bool texel_buffer_reads = false;  // see texel_reads()
    bool int8_activation_matmul = false;  // see int8_matmul()
    bool cooperative_matrix_kernels = false;  // see coopmat_kernels()
    bool force_staging = false;       // VKLLM_FORCE_STAGING: transfers go through the staging ring always
    std::string profile;              // the VKLLM_DEVICE_PROFILE that clamped these facts, or empty

    bool has_subgroup(VkSubgroupFeatureFlagBits operation) const {
        return (subgroup_operations & operation) != 0;
    }
    // fp16 arithmetic on 16-bit storage is usable and not disabled by VKLLM_DISABLE_F16.
    bool use_float16() const { return float16_kernels; }
    // Weights and matvec inputs read through uniform texel buffers instead of storage buffers. On
    // lavapipe a storage-buffer load is a scalar load and branch per lane and word, a texel fetch one
    // vector gather (7-9 vs ~1 GB/s, docs/PERFORMANCE.md); GPUs keep storage buffers, their usual
    // fast path. VKLLM_TEXEL_READS=0 or 1 overrides the choice.
    bool texel_reads() const { return texel_buffer_reads; }
    // Prefill of Q4_0 and Q8_0 weights with int8 activations (ops/matmul.h): where integer dot
    // products are accelerated. VKLLM_INT8_ACTIVATIONS=0 or 1 overrides the choice (1 needs integer dot
    // products; the kernel reads storage buffers, so texel reads keep the float kernels).
    bool int8_matmul() const { return int8_activation_matmul; }
    // Prefill on the matrix units (ops/coopmat.h): on unless VKLLM_COOPMAT=0 (README, "Cooperative
    // matrices"), on a device with cooperative matrices, a
    // coopmat_f16_shape, fp16 arithmetic, the Vulkan memory model and a subgroup size the pipelines
    // can require, in a build that has the kernels (their toolchain, cmake/Shaders.cmake).
    bool coopmat_kernels() const { return cooperative_matrix_kernels; }
    // The f16 x f16 + f32 -> f32 subgroup product the kernels take: M and N multiples of 4 up to 32, K a
    // multiple of 4 dividing 32 (a kernel's unit of weights); the largest M x N, then the largest K.
    std::optional<CooperativeMatrixShape> coopmat_f16_shape() const;
    // Device-local memory the host can map directly (integrated GPUs, ReBAR, lavapipe).
    bool unified_memory() const;
    std::string type_name() const;
    std::string driver_version_string() const;
};

// The device's facts with the switches applied (apply_switches).
Capabilities probe(VkPhysicalDevice device);
// VKLLM_DEVICE_PROFILE clamps the facts to a device class (gpu/profiles.h); then the fp16 and
// texel-read and int8 choices follow from them, VKLLM_DISABLE_F16, VKLLM_TEXEL_READS and
// VKLLM_INT8_ACTIVATIONS.
void apply_switches(Capabilities& caps);

std::string subgroup_operation_names(VkSubgroupFeatureFlags operations);

}  // namespace vkllm::gpu
