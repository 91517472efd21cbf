#include <doctest/doctest.h>

#include "gpu_fixture.h"

using namespace vkllm;

TEST_CASE("the probe reads lavapipe-or-GPU capabilities that shader variants depend on") {
    const gpu::Capabilities& caps = test::device().caps();
    CHECK(!caps.name.empty());
    CHECK(caps.subgroup_size >= 1);
    CHECK((caps.subgroup_size & (caps.subgroup_size - 1)) == 0);
    CHECK(caps.has_subgroup(VK_SUBGROUP_FEATURE_ARITHMETIC_BIT));
    CHECK(caps.max_shared_memory >= 16384);
    CHECK(caps.max_workgroup_invocations >= 128);
    CHECK(caps.max_storage_buffer_range >= (1u << 27) - 1);
    CHECK(caps.max_memory_allocation_size >= caps.max_storage_buffer_range / 2);
    CHECK(caps.max_buffer_size >= caps.max_storage_buffer_range);
    CHECK(!caps.heaps.empty());
    CHECK(!caps.memory_types.empty());
    CHECK(caps.compute_queue_family != UINT32_MAX);
    if (caps.compute_timestamps) CHECK(caps.timestamp_period_ns > 0);
}

TEST_CASE("VKLLM_DISABLE_F16 forces the fp32 fallbacks") {
    const gpu::Capabilities& caps = test::device().caps();
    setenv("VKLLM_DISABLE_F16", "1", 1);
    CHECK_FALSE(caps.use_float16());
    unsetenv("VKLLM_DISABLE_F16");
    CHECK(caps.use_float16() == (caps.float16 && caps.storage_buffer_16bit));
}

TEST_CASE("devices are chosen by index or by part of the name, and a bad selector is an error") {
    gpu::DeviceChoice by_default = gpu::choose_device(test::instance());
    REQUIRE(!by_default.devices.empty());
    const std::string& name = by_default.devices[by_default.chosen].name;
    CHECK(gpu::choose_device(test::instance(), std::to_string(by_default.chosen)).chosen == by_default.chosen);
    std::string part = name.substr(1, 5);
    gpu::DeviceChoice by_name = gpu::choose_device(test::instance(), part);
    CHECK(by_name.devices[by_name.chosen].name.find(part) != std::string::npos);
    CHECK_THROWS_WITH_AS(gpu::choose_device(test::instance(), "99"), doctest::Contains("does not exist"), Error);
    CHECK_THROWS_WITH_AS(gpu::choose_device(test::instance(), "no-such-gpu"), doctest::Contains("no-such-gpu"), Error);
}
