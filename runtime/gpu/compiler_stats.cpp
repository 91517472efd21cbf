#include "gpu/compiler_stats.h"

#include "core/error.h"
#include "gpu/check.h"
#include "gpu/device.h"
#include "gpu/pipeline.h"

namespace vkllm::gpu {
namespace {

double statistic_value(const VkPipelineExecutableStatisticKHR& statistic) {
    switch (statistic.format) {
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR: return statistic.value.b32 ? 1 : 0;
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR: return double(statistic.value.i64);
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR: return double(statistic.value.u64);
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_FLOAT64_KHR: return statistic.value.f64;
        default: return 0;
    }
}

}  // namespace

std::optional<double> ExecutableStatistics::find(std::string_view name) const {
    for (const CompilerStatistic& statistic : values)
        if (statistic.name == name) return statistic.value;
    return std::nullopt;
}

std::vector<ExecutableStatistics> compiler_statistics(const Device& device, const Pipeline& pipeline) {
    if (!device.pipeline_statistics())
        fail("pipeline '{}': its device was not created to keep compiler statistics", pipeline.name);
    VkPipelineInfoKHR info{VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR};
    info.pipeline = pipeline.pipeline;
    uint32_t count = 0;
    VKLLM_VK_CHECK(vkGetPipelineExecutablePropertiesKHR(device.handle(), &info, &count, nullptr));
    std::vector<VkPipelineExecutablePropertiesKHR> executables(count, {VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_PROPERTIES_KHR});
    VKLLM_VK_CHECK(vkGetPipelineExecutablePropertiesKHR(device.handle(), &info, &count, executables.data()));

    std::vector<ExecutableStatistics> out;
    for (uint32_t index = 0; index < count; ++index) {
        VkPipelineExecutableInfoKHR executable{VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR};
        executable.pipeline = pipeline.pipeline;
        executable.executableIndex = index;
        uint32_t n = 0;
        VKLLM_VK_CHECK(vkGetPipelineExecutableStatisticsKHR(device.handle(), &executable, &n, nullptr));
        std::vector<VkPipelineExecutableStatisticKHR> statistics(n, {VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR});
        VKLLM_VK_CHECK(vkGetPipelineExecutableStatisticsKHR(device.handle(), &executable, &n, statistics.data()));
        ExecutableStatistics& entry = out.emplace_back();
        entry.executable = executables[index].name;
        for (const auto& statistic : statistics) entry.values.push_back({statistic.name, statistic_value(statistic)});
    }
    return out;
}

}  // namespace vkllm::gpu
