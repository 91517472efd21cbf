#pragma once
// The driver's compiler statistics for a pipeline (VK_KHR_pipeline_executable_properties), on a
// device created with DeviceOptions::pipeline_statistics. Names are the driver's own: RADV (ACO)
// gives "VGPRs", "SGPRs", "Spilled VGPRs", "Spilled SGPRs", "Code size", "LDS size", "Scratch size"
// and "Subgroups per SIMD", among others.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vkllm::gpu {

class Device;
struct Pipeline;

struct CompilerStatistic {
    std::string name;
    double value = 0;  // booleans as 0 or 1
};

struct ExecutableStatistics {
    std::string executable;  // a pipeline has one per shader stage it compiled (compute: one)
    std::vector<CompilerStatistic> values;

    std::optional<double> find(std::string_view name) const;
};

std::vector<ExecutableStatistics> compiler_statistics(const Device& device, const Pipeline& pipeline);

}  // namespace vkllm::gpu
