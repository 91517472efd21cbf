#pragma once
// The driver's compiler statistics for a pipeline (VK_KHR_pipeline_executable_properties), on a
// device created with DeviceOptions::pipeline_statistics. Names and formats are the driver's own:
// RADV (ACO) gives "VGPRs", "SGPRs", "Spilled VGPRs", "Spilled SGPRs", "Code size", "LDS size",
// "Scratch size" and "Subgroups per SIMD" among others, NVIDIA "Register Count" and its sizes as
// uint64, Intel's ANV "GRF registers" and "Spills".
#include <volk.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace vkllm::gpu {

class Device;
struct Pipeline;

// One statistic in the format the driver declares for it (VkPipelineExecutableStatisticFormatKHR):
// bool32, int64, uint64 or float64; monostate for a format this build does not know.
struct CompilerStatistic {
    std::string name;
    std::variant<std::monostate, bool, int64_t, uint64_t, double> value;

    // As its format writes it: "true", "-3", "68719476736", "0.25"; "?" for an unknown format.
    std::string text() const;
    // For maxima and sums: true is 1, an unknown format 0.
    double number() const;
};

// A statistic as the driver wrote it, read from the union member its format names.
CompilerStatistic read_statistic(const VkPipelineExecutableStatisticKHR& statistic);

struct ExecutableStatistics {
    std::string executable;  // a pipeline has one per shader stage it compiled (compute: one)
    std::vector<CompilerStatistic> values;

    const CompilerStatistic* find(std::string_view name) const;
    // The registers an invocation holds, under whichever name its compiler gives them: AMD's "VGPRs",
    // NVIDIA's "Register Count", Intel's "GRF registers", Adreno's and Mali's "Registers used"...;
    // null where the driver reports none of them.
    const CompilerStatistic* registers() const;
    // Spilled registers, or spill instructions where the compiler counts those; 0 where none is reported.
    double spills() const;
};

// One line of `vkllm shaders --stats` after the pipeline's name: "registers N  spills N", then ACO's
// SGPRs, code size, LDS, scratch and waves per SIMD, or (with all, and on every other driver) all the
// driver's other statistics, each as its format writes it.
std::string statistics_line(const ExecutableStatistics& executable, bool all);

// The largest register count and the spills over many executables, for the closing line.
struct StatisticsSummary {
    size_t spilling = 0;  // executables with spills
    double max_registers = 0, spills = 0;
    std::string register_name;  // the name max_registers was reported under; empty: none reported

    void add(const ExecutableStatistics& executable);
    std::string text() const;  // "max registers 114 (Register Count), 0 spilling (0 spilled)"
};

std::vector<ExecutableStatistics> compiler_statistics(const Device& device, const Pipeline& pipeline);

}  // namespace vkllm::gpu
