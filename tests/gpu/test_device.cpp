#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "gpu/profiles.h"
#include "gpu/shaders.h"
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

// Switches are read when a device is probed, never per call: setting one later changes nothing.
TEST_CASE("VKLLM_DISABLE_F16 forces the fp32 fallbacks when the device is probed") {
    gpu::Capabilities caps = test::device().caps();
    const bool created_with = caps.use_float16();
    setenv("VKLLM_DISABLE_F16", "1", 1);
    CHECK(test::device().caps().use_float16() == created_with);
    gpu::apply_switches(caps);
    CHECK_FALSE(caps.use_float16());
    unsetenv("VKLLM_DISABLE_F16");
    gpu::apply_switches(caps);
    CHECK(caps.use_float16() == (caps.float16 && caps.storage_buffer_16bit));
    {
        test::Float32Kernels fp32;
        CHECK_FALSE(test::device().caps().use_float16());
    }
    CHECK(test::device().caps().use_float16() == created_with);
}

TEST_CASE("VKLLM_INT8_ACTIVATIONS overrides the int8 prefill choice where integer dot products exist") {
    gpu::Capabilities caps = test::device().caps();
    gpu::apply_switches(caps);
    CHECK(caps.int8_matmul() == caps.integer_dot_product_accelerated);
    setenv("VKLLM_INT8_ACTIVATIONS", "1", 1);
    gpu::apply_switches(caps);
    CHECK(caps.int8_matmul() == caps.integer_dot_product);
    setenv("VKLLM_INT8_ACTIVATIONS", "0", 1);
    gpu::apply_switches(caps);
    CHECK_FALSE(caps.int8_matmul());
    unsetenv("VKLLM_INT8_ACTIVATIONS");
    caps.integer_dot_product = caps.integer_dot_product_accelerated = false;  // a device without them
    setenv("VKLLM_INT8_ACTIVATIONS", "1", 1);
    gpu::apply_switches(caps);
    CHECK_FALSE(caps.int8_matmul());
    unsetenv("VKLLM_INT8_ACTIVATIONS");
}

// A device with matrix units, as NVIDIA's driver lists them for the H100 (among others: 16x8x16 and
// 16x16x16 f16 products into f32, 16x16x16 into f16, 16x16x32 int8), and a workgroup-scope product.
gpu::Capabilities with_matrix_units(gpu::Capabilities caps) {
    using Shape = gpu::CooperativeMatrixShape;
    caps.cooperative_matrix = caps.float16 = caps.vulkan_memory_model = true;
    caps.cooperative_matrix_shapes = {Shape{.m = 16, .n = 8, .k = 16, .c_type = 1, .result_type = 1, .scope = 3},
                                      Shape{.m = 16, .n = 16, .k = 16, .scope = 3},
                                      Shape{.m = 16, .n = 16, .k = 8, .c_type = 1, .result_type = 1, .scope = 3},
                                      Shape{.m = 16, .n = 16, .k = 16, .c_type = 1, .result_type = 1, .scope = 3},
                                      Shape{.m = 16, .n = 16, .k = 32, .a_type = 3, .b_type = 3, .c_type = 5,
                                            .result_type = 5, .scope = 3},
                                      Shape{.m = 32, .n = 32, .k = 16, .c_type = 1, .result_type = 1, .scope = 2}};
    return caps;
}

TEST_CASE("cooperative matrices: the kernels' product, on unless VKLLM_COOPMAT=0, never from a profile") {
    // apply_switches would apply the run's VKLLM_DEVICE_PROFILE too: this test applies profiles itself.
    const char* run_profile = std::getenv("VKLLM_DEVICE_PROFILE");
    const std::string saved_profile = run_profile ? run_profile : "";
    unsetenv("VKLLM_DEVICE_PROFILE");
    gpu::Capabilities caps = with_matrix_units(test::device().caps());
    caps.profile.clear();
    // f16 x f16 into f32 at subgroup scope: the largest M x N, then the largest K.
    const std::optional<gpu::CooperativeMatrixShape> shape = caps.coopmat_f16_shape();
    REQUIRE(shape);
    CHECK(shape->text() == "16x16x16 f16 x f16 + f32 -> f32");
    CHECK(caps.cooperative_matrix_shapes[4].text() == "16x16x32 s8 x s8 + s32 -> s32");
    CHECK(caps.cooperative_matrix_shapes[5].text() == "32x32x16 f16 x f16 + f32 -> f32 (workgroup)");

    // On by default where the build has them (their toolchain); VKLLM_COOPMAT=0 turns them off.
    const char* run_switch = std::getenv("VKLLM_COOPMAT");
    const std::string saved_switch = run_switch ? run_switch : "";
    const bool built = shaders::built("matmul_coopmat_q4_0");
    unsetenv("VKLLM_COOPMAT");
    gpu::apply_switches(caps);
    CHECK(caps.coopmat_kernels() == built);
    setenv("VKLLM_COOPMAT", "0", 1);
    gpu::apply_switches(caps);
    CHECK_FALSE(caps.coopmat_kernels());
    setenv("VKLLM_COOPMAT", "1", 1);
    gpu::apply_switches(caps);
    CHECK(caps.coopmat_kernels() == built);
    // Each thing the kernels also need.
    for (auto remove : {+[](gpu::Capabilities& c) {
                            std::erase_if(c.cooperative_matrix_shapes, [](const auto& s) { return s.f16_into_f32(); });
                        },
                        +[](gpu::Capabilities& c) { c.float16 = false; },
                        +[](gpu::Capabilities& c) { c.vulkan_memory_model = false; },
                        +[](gpu::Capabilities& c) { c.cooperative_matrix = false; },
                        +[](gpu::Capabilities& c) {
                            c.max_subgroup_size = 2 * c.min_subgroup_size;
                            c.subgroup_size_control = false;
                        }}) {
        gpu::Capabilities lacking = caps;
        remove(lacking);
        gpu::apply_switches(lacking);
        CHECK_FALSE(lacking.coopmat_kernels());
    }
    // Only the nvidia profile keeps matrix units; none gives them to a device without: lavapipe under
    // VKLLM_DEVICE_PROFILE=nvidia keeps its kernels off.
    for (const std::string& profile : gpu::profile_names()) {
        gpu::Capabilities clamped = caps;
        gpu::apply_profile(clamped, profile);
        CHECK(clamped.cooperative_matrix == (profile == "nvidia"));
        gpu::Capabilities plain = test::device().caps();
        gpu::apply_profile(plain, profile);
        gpu::apply_switches(plain);
        CHECK((!plain.cooperative_matrix || test::device().caps().cooperative_matrix));
        if (!test::device().caps().cooperative_matrix) CHECK_FALSE(plain.coopmat_kernels());
    }
    if (saved_switch.empty())
        unsetenv("VKLLM_COOPMAT");
    else
        setenv("VKLLM_COOPMAT", saved_switch.c_str(), 1);
    if (!saved_profile.empty()) setenv("VKLLM_DEVICE_PROFILE", saved_profile.c_str(), 1);
}

TEST_CASE("a device profile clamps limits and features, and a missing requirement names it") {
    gpu::Capabilities caps = test::device().caps();
    caps.profile.clear();
    gpu::Capabilities mali = caps;
    gpu::apply_profile(mali, "mobile-mali");
    CHECK(mali.profile == "mobile-mali");
    CHECK(mali.max_shared_memory == std::min(caps.max_shared_memory, 32u * 1024));
    CHECK(mali.max_workgroup_invocations == std::min(caps.max_workgroup_invocations, 256u));
    CHECK(mali.max_storage_buffer_range <= 128ull << 20);
    CHECK_FALSE(mali.float16);
    CHECK(mali.type != VK_PHYSICAL_DEVICE_TYPE_CPU);
    CHECK(gpu::missing_requirements(mali).empty());

    gpu::Capabilities minimum = caps;
    gpu::apply_profile(minimum, "vulkan-1.1-minimum");
    CHECK(minimum.max_shared_memory == 16u * 1024);
    CHECK(minimum.max_workgroup_invocations == 128);
    CHECK_FALSE(minimum.has_subgroup(VK_SUBGROUP_FEATURE_ARITHMETIC_BIT));
    CHECK_FALSE(minimum.storage_buffer_8bit);
    CHECK(gpu::missing_requirements(minimum).empty());  // kernels have _basic builds
    minimum.subgroup_operations = 0;
    CHECK(gpu::missing_requirements(minimum).find("basic subgroup operations") != std::string::npos);
    CHECK(gpu::missing_requirements(minimum).find("vulkan-1.1-minimum") != std::string::npos);

    CHECK_THROWS_WITH_AS(gpu::apply_profile(caps, "phone"), doctest::Contains("mobile-mali"), Error);
}

TEST_CASE("null hardware is never chosen to run, only opened to compile") {
    gpu::Capabilities caps = test::device().caps();
    caps.null_hardware = true;
    CHECK(gpu::missing_requirements(caps).find("null hardware") != std::string::npos);
    CHECK(gpu::missing_requirements(caps, /*compile_only=*/true).empty());
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
