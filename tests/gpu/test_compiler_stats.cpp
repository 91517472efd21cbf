// Compiler statistics as drivers declare them (VK_KHR_pipeline_executable_properties), from synthetic
// records in each vendor's names and formats: no NVIDIA or Intel device is needed to check how their
// figures are read and printed.
#include <doctest/doctest.h>

#include <cstring>
#include <string>

#include "gpu/compiler_stats.h"

using namespace vkllm::gpu;

namespace {

VkPipelineExecutableStatisticKHR record(const char* name, VkPipelineExecutableStatisticFormatKHR format) {
    VkPipelineExecutableStatisticKHR statistic{VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR};
    std::strncpy(statistic.name, name, VK_MAX_DESCRIPTION_SIZE - 1);
    statistic.format = format;
    return statistic;
}

VkPipelineExecutableStatisticKHR u64(const char* name, uint64_t value) {
    auto statistic = record(name, VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR);
    statistic.value.u64 = value;
    return statistic;
}

ExecutableStatistics executable(std::initializer_list<VkPipelineExecutableStatisticKHR> records) {
    ExecutableStatistics out{"Compute Shader", {}};
    for (const auto& statistic : records) out.values.push_back(read_statistic(statistic));
    return out;
}

}  // namespace

TEST_CASE("each statistic is read from the union member its format names and printed in that format") {
    // 2^36 as a uint64 (NVIDIA's "Local Memory Size" on the H100) prints whole, not as 6.87195e+10.
    CHECK(read_statistic(u64("Local Memory Size", uint64_t(1) << 36)).text() == "68719476736");
    CHECK(read_statistic(u64("Huge", UINT64_MAX)).text() == "18446744073709551615");

    auto signed_value = record("Delta", VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR);
    signed_value.value.i64 = -3;
    CHECK(read_statistic(signed_value).text() == "-3");
    CHECK(read_statistic(signed_value).number() == -3);

    auto real = record("Cycles", VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_FLOAT64_KHR);
    real.value.f64 = 12.25;
    CHECK(read_statistic(real).text() == "12.25");

    // A bool32 fills only the union's first 4 bytes: the rest must not be read.
    auto flag = record("Early preamble", VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR);
    flag.value.u64 = 0xFFFFFFFF00000000ull;
    CHECK(read_statistic(flag).text() == "false");
    flag.value.b32 = VK_TRUE;
    CHECK(read_statistic(flag).text() == "true");
    CHECK(read_statistic(flag).number() == 1);

    auto unknown = record("Future", VkPipelineExecutableStatisticFormatKHR(7));
    unknown.value.u64 = 5;
    CHECK(read_statistic(unknown).text() == "?");
    CHECK(read_statistic(unknown).name == "Future");
}

TEST_CASE("registers and spills are one column whatever each vendor calls them") {
    const ExecutableStatistics radv = executable({u64("SGPRs", 40), u64("VGPRs", 56), u64("Spilled SGPRs", 0),
                                                  u64("Spilled VGPRs", 0), u64("Code size", 1234), u64("LDS size", 9216),
                                                  u64("Scratch size", 0), u64("Subgroups per SIMD", 18)});
    const ExecutableStatistics nvidia = executable(
        {u64("Register Count", 96), u64("Local Memory Size", uint64_t(1) << 36), u64("Shared Memory Size", 5120)});
    const ExecutableStatistics intel = executable({u64("Instructions", 900), u64("Spills", 3), u64("Fills", 3),
                                                   u64("GRF registers", 128)});
    const ExecutableStatistics turnip = executable({u64("Max Waves Per Core", 16), u64("Registers used", 12)});
    const ExecutableStatistics unnamed = executable({u64("Instruction Count", 77)});

    CHECK(radv.registers()->text() == "56");
    CHECK(nvidia.registers()->name == "Register Count");
    CHECK(intel.registers()->text() == "128");
    CHECK(turnip.registers()->text() == "12");
    CHECK(unnamed.registers() == nullptr);
    CHECK(intel.spills() == 3);  // spill instructions; the fills are their other half
    CHECK(nvidia.spills() == 0);

    CHECK(statistics_line(radv, false) ==
          "registers  56  spills 0  SGPRs 40  code 1234 B  LDS 9216 B  scratch 0 B  waves/SIMD 18");
    CHECK(statistics_line(nvidia, false) ==
          "registers  96  spills 0  Local Memory Size 68719476736  Shared Memory Size 5120");
    CHECK(statistics_line(unnamed, false) == "registers   -  spills 0  Instruction Count 77");
    // --all on ACO: every statistic after the registers, in the driver's order and names.
    CHECK(statistics_line(radv, true) == "registers  56  spills 0  SGPRs 40  Spilled SGPRs 0  Spilled VGPRs 0  "
                                         "Code size 1234  LDS size 9216  Scratch size 0  Subgroups per SIMD 18");

    StatisticsSummary summary;
    for (const ExecutableStatistics* each : {&nvidia, &nvidia}) summary.add(*each);
    CHECK(summary.text() == "max registers 96 (Register Count), 0 spilling (0 spilled)");
    summary.add(intel);
    CHECK(summary.text() == "max registers 128 (GRF registers), 1 spilling (3 spilled)");
    StatisticsSummary none;
    none.add(unnamed);
    CHECK(none.text().starts_with("registers not reported"));
}
