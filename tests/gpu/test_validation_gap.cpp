// Old validation layers (gpu/instance.h): the messages that come from a layer older than an extension
// vkllm uses are set aside by exact message id and subject; every other message still fails the run.
// The texts are what Debian 12's layer (1.3.239, the one the H200 run had) says, captured from it.
#include <doctest/doctest.h>

#include <cstdint>
#include <fmt/format.h>
#include <string>
#include <vector>

#include "gpu/cooperative_matrix_khr.h"
#include "gpu/instance.h"
#include "gpu/shaders.h"
#include "gpu_fixture.h"

using namespace vkllm;

namespace {

constexpr uint32_t layer_1_3_239 = VK_MAKE_API_VERSION(0, 1, 3, 239);
constexpr uint32_t layer_1_3_255 = VK_MAKE_API_VERSION(0, 1, 3, 255);

const std::string device_id = "VUID-VkDeviceCreateInfo-pNext-pNext";
std::string unknown_structure(const char* call, const char* chain, const char* id, const char* message_id, int64_t type) {
    return fmt::format("Validation Error: [ {} ] Object 0: VK_NULL_HANDLE, type = VK_OBJECT_TYPE_DEVICE; | MessageID = "
                       "{} | {}: {}->pNext chain includes a structure with unknown VkStructureType ({}); Allowed "
                       "structures are [VkDeviceDeviceMemoryReportCreateInfoEXT, VkDeviceDiagnosticsConfigCreateInfoNV]. "
                       "This error is based on the Valid Usage documentation for version 239 of the Vulkan header.",
                       id, message_id, call, chain, type);
}
std::string device_create(int64_t type) {
    return unknown_structure("vkCreateDevice", "pCreateInfo", device_id.c_str(), "0x901f59ec", type);
}
const std::string spirv_id = "UNASSIGNED-CoreValidation-Shader-InconsistentSpirv";
std::string invalid_capability(int capability) {
    return fmt::format("Validation Error: [ {} ] Object 0: handle = 0x55e47d9a9d90, type = VK_OBJECT_TYPE_DEVICE; | "
                       "MessageID = 0x6bbb14 | SPIR-V module not valid: Invalid capability operand: {}",
                       spirv_id, capability);
}

}  // namespace

TEST_CASE("an old layer's messages about an extension in use are set aside, by exact id and subject") {
    const std::vector<std::string> in_use = {VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME};
    const std::vector<std::string> none;
    auto gap = [](const std::string& id, const std::string& text, uint32_t layer, const std::vector<std::string>& used) {
        return gpu::layer_gap_extension(id, text, layer, used).has_value();
    };
    // The structures of VK_KHR_cooperative_matrix (features, properties) and its SPIR-V capability.
    CHECK(gpu::layer_gap_extension(device_id, device_create(1000506000), layer_1_3_239, in_use) ==
          VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME);
    CHECK(gap("VUID-VkPhysicalDeviceProperties2-pNext-pNext",
              unknown_structure("vkGetPhysicalDeviceProperties2", "pProperties",
                                "VUID-VkPhysicalDeviceProperties2-pNext-pNext", "0xdd73dbcf", 1000506002),
              layer_1_3_239, in_use));
    CHECK(gap(spirv_id, invalid_capability(6022), layer_1_3_239, in_use));

    // Not where the layer knows the extension, nor where vkllm does not use it.
    CHECK_FALSE(gap(device_id, device_create(1000506000), layer_1_3_255, in_use));
    CHECK_FALSE(gap(spirv_id, invalid_capability(6022), layer_1_3_239, none));
    // Not another extension's structure or capability, nor a number that only starts like one.
    CHECK_FALSE(gap(device_id, device_create(1000506003), layer_1_3_239, in_use));
    CHECK_FALSE(gap(device_id, device_create(10005060001), layer_1_3_239, in_use));
    CHECK_FALSE(gap(spirv_id, invalid_capability(6023), layer_1_3_239, in_use));
    CHECK_FALSE(gap(spirv_id, invalid_capability(6022) + "7", layer_1_3_239, in_use));
    // Not the same subject under another message id.
    CHECK_FALSE(gap("VUID-VkShaderModuleCreateInfo-pCode-01379", invalid_capability(6022), layer_1_3_239, in_use));
    // The real error the H200 run found among the gap's messages: Device scope without
    // vulkanMemoryModelDeviceScope. Never set aside.
    CHECK_FALSE(gap("VUID-RuntimeSpirv-vulkanMemoryModel-06265",
                    "Validation Error: [ VUID-RuntimeSpirv-vulkanMemoryModel-06265 ] Object 0: handle = 0x5633f1a2b3c0, "
                    "type = VK_OBJECT_TYPE_SHADER_MODULE; | VkPhysicalDeviceVulkan12Features::vulkanMemoryModel is "
                    "enabled and VkPhysicalDeviceVulkan12Features::vulkanMemoryModelDeviceScope is disabled, but\n"
                    "%142 = OpAtomicIAdd %uint %140 %uint_1 %uint_0 %uint_1\nuses Device memory scope.",
                    layer_1_3_239, in_use));
}

// Through the tests' own messenger: a shader module declaring cooperative matrices on a device that does
// not use the extension is an error the run counts, whatever the layer's age.
TEST_CASE("a message about an extension the device does not use still fails the run") {
    gpu::Device& device = test::device();
    if (device.caps().cooperative_matrix || !shaders::built("matmul_coopmat_q4_0")) {
        MESSAGE("the device has cooperative matrices (or the build lacks the kernels): the module would be valid");
        return;
    }
    const std::span<const uint32_t> spirv = shaders::find("matmul_coopmat_q4_0");
    VkShaderModuleCreateInfo info{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
    info.codeSize = spirv.size_bytes();
    info.pCode = spirv.data();
    const uint64_t set_aside = gpu::validation_messages_set_aside();
    test::ExpectValidationMessages expected;
    VkShaderModule module = VK_NULL_HANDLE;
    if (vkCreateShaderModule(device.handle(), &info, nullptr, &module) == VK_SUCCESS)
        vkDestroyShaderModule(device.handle(), module, nullptr);
    CHECK(expected.seen() >= 1);
    CHECK(gpu::validation_messages_set_aside() == set_aside);
}
