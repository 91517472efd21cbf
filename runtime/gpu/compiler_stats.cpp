#include "gpu/compiler_stats.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/error.h"
#include "gpu/check.h"
#include "gpu/device.h"
#include "gpu/pipeline.h"

namespace vkllm::gpu {
namespace {

// Per invocation: AMD's (RADV/ACO, AMDVLK) vector registers, NVIDIA's registers, Intel's (ANV) GRF
// registers, Qualcomm's Adreno (Turnip) and Arm's Mali (PanVK) registers, Apple's (Honeykrisp)
// 16-bit registers, Imagination's PowerVR temporaries (Mesa's names from its shader_stats tables).
constexpr std::string_view register_names[] = {"VGPRs",          "Register Count", "GRF registers",
                                               "Registers used", "GPRs",           "Temp count"};
// Spilled registers (ACO) or spill instructions (ANV, PanVK, Honeykrisp, PowerVR, V3DV).
constexpr std::string_view spill_names[] = {"Spilled VGPRs", "Spilled SGPRs", "Spills", "Spill count", "TMU Spills"};

// ACO's line without --all: these statistics, labelled, after the registers and spills.
struct AcoField {
    std::string_view name, label, unit;
};
constexpr AcoField aco_fields[] = {{"SGPRs", "SGPRs", ""},
                                   {"Code size", "code", " B"},
                                   {"LDS size", "LDS", " B"},
                                   {"Scratch size", "scratch", " B"},
                                   {"Subgroups per SIMD", "waves/SIMD", ""}};

}  // namespace

std::string CompilerStatistic::text() const {
    return std::visit(
        [](const auto& v) -> std::string {
            using T = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<T, std::monostate>) return "?";
            else if constexpr (std::is_same_v<T, bool>) return v ? "true" : "false";
            else return fmt::format("{}", v);
        },
        value);
}

double CompilerStatistic::number() const {
    return std::visit(
        [](const auto& v) -> double {
            if constexpr (std::is_same_v<std::decay_t<decltype(v)>, std::monostate>) return 0;
            else return double(v);
        },
        value);
}

CompilerStatistic read_statistic(const VkPipelineExecutableStatisticKHR& statistic) {
    CompilerStatistic out{statistic.name, std::monostate{}};
    switch (statistic.format) {
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR: out.value = statistic.value.b32 != VK_FALSE; break;
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR: out.value = statistic.value.i64; break;
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR: out.value = statistic.value.u64; break;
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_FLOAT64_KHR: out.value = statistic.value.f64; break;
        default: break;
    }
    return out;
}

const CompilerStatistic* ExecutableStatistics::find(std::string_view name) const {
    auto found = std::ranges::find(values, name, &CompilerStatistic::name);
    return found == values.end() ? nullptr : &*found;
}

const CompilerStatistic* ExecutableStatistics::registers() const {
    for (std::string_view name : register_names)
        if (const CompilerStatistic* statistic = find(name)) return statistic;
    return nullptr;
}

double ExecutableStatistics::spills() const {
    double total = 0;
    for (std::string_view name : spill_names)
        if (const CompilerStatistic* statistic = find(name)) total += statistic->number();
    return total;
}

std::string statistics_line(const ExecutableStatistics& executable, bool all) {
    const CompilerStatistic* registers = executable.registers();
    std::string line = fmt::format("registers {:>3}  spills {}", registers ? registers->text() : "-", executable.spills());
    if (!all && executable.find("VGPRs")) {
        for (const AcoField& field : aco_fields) {
            const CompilerStatistic* statistic = executable.find(field.name);
            line += fmt::format("  {} {}{}", field.label, statistic ? statistic->text() : "-", field.unit);
        }
        return line;
    }
    for (const CompilerStatistic& statistic : executable.values)
        if (&statistic != registers) line += fmt::format("  {} {}", statistic.name, statistic.text());
    return line;
}

void StatisticsSummary::add(const ExecutableStatistics& executable) {
    if (const CompilerStatistic* registers = executable.registers();
        registers && (register_name.empty() || registers->number() > max_registers)) {
        max_registers = registers->number();
        register_name = registers->name;
    }
    spills += executable.spills();
    spilling += executable.spills() > 0;
}

std::string StatisticsSummary::text() const {
    const std::string registers = register_name.empty()
                                      ? std::string("registers not reported (--all lists what the driver gives)")
                                      : fmt::format("max registers {} ({})", max_registers, register_name);
    return fmt::format("{}, {} spilling ({} spilled)", registers, spilling, spills);
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
        for (const auto& statistic : statistics) entry.values.push_back(read_statistic(statistic));
    }
    return out;
}

}  // namespace vkllm::gpu
