#include <doctest/doctest.h>

#include <bit>
#include <filesystem>
#include <fstream>
#include <span>

#include "gpu/pipeline.h"
#include "gpu/shaders.h"
#include "gpu_fixture.h"
#include "params.h"

using namespace vkllm;

namespace {

// y = a * x * multiplier + y on the GPU with the given pipeline.
std::vector<float> run_axpy(const gpu::Pipeline& pipeline, const std::vector<float>& x, std::vector<float> y, float a) {
    gpu::Buffer x_buffer = test::upload(x), y_buffer = test::upload(y);
    gpu::Dispatch dispatch{.pipeline = &pipeline};
    dispatch.bindings = {{x_buffer.range(), gpu::Access::Read}, {y_buffer.range(), gpu::Access::ReadWrite}};
    dispatch.params(params::AxpyParams{uint32_t(x.size()), a});
    dispatch.groups = {pipeline.groups_x(x.size()), 1, 1};
    gpu::Commands commands(test::device());
    commands.record(dispatch).submit_and_wait();
    return test::download(y_buffer, y.size());
}

// Whether the SPIR-V declares a capability (OpCapability: opcode 17, two words).
bool declares_capability(std::span<const uint32_t> spirv, uint32_t capability) {
    for (size_t word = 5; word < spirv.size();) {
        const uint32_t count = spirv[word] >> 16;
        if (count == 0) break;
        if ((spirv[word] & 0xFFFF) == 17 && word + 1 < spirv.size() && spirv[word + 1] == capability) return true;
        word += count;
    }
    return false;
}

}  // namespace

// A device with only basic subgroup operations (the Vulkan 1.1 minimum) gets kernels that declare
// neither subgroup arithmetic nor ballots; every kernel using them has such a build.
TEST_CASE("without subgroup arithmetic or ballots, kernels come from their _basic builds") {
    constexpr uint32_t arithmetic = 63, ballot = 64;  // GroupNonUniformArithmetic, GroupNonUniformBallot
    gpu::Capabilities basic = test::device().caps();
    basic.subgroup_operations = VK_SUBGROUP_FEATURE_BASIC_BIT;
    size_t kernels_with_basic_builds = 0;
    for (const shaders::Embedded& shader : shaders::all()) {
        if (shader.name.ends_with("_basic")) continue;
        CAPTURE(shader.name);
        const std::span<const uint32_t> chosen = gpu::kernel_spirv(shader.name, basic);
        CHECK_FALSE(declares_capability(chosen, arithmetic));
        CHECK_FALSE(declares_capability(chosen, ballot));
        if (chosen.data() != shader.spirv.data()) ++kernels_with_basic_builds;
        CHECK(gpu::kernel_spirv(shader.name, test::device().caps()).data() == shader.spirv.data());
    }
    CHECK(declares_capability(shaders::find("rmsnorm"), arithmetic));  // the check above can fail
    CHECK(kernels_with_basic_builds > 50);
}

TEST_CASE("every embedded shader reflects: buffers from binding 0 on, push constants, workgroup size") {
    REQUIRE(!shaders::all().empty());
    for (const shaders::Embedded& shader : shaders::all()) {
        CAPTURE(shader.name);
        gpu::ShaderInfo info = gpu::reflect(shader.name, shader.spirv);
        CHECK(!info.bindings.empty());
    }
    gpu::ShaderInfo axpy = gpu::reflect("axpy_f32", shaders::find("axpy_f32"));
    CHECK(axpy.bindings.size() == 2);
    CHECK(axpy.push_constant_bytes == sizeof(params::AxpyParams));
    CHECK(axpy.local_size_spec_id[0] == 0);
    CHECK(axpy.local_size_with(std::vector<gpu::SpecConstant>{{0, 96}})[0] == 96);
    // The texel-read variant binds weights, x and the norm weight as uniform texel buffers, y as storage.
    gpu::ShaderInfo texel = gpu::reflect("matvec_q4_0_texel", shaders::find("matvec_q4_0_texel"));
    CHECK(texel.bindings == std::vector<VkDescriptorType>{VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER,
                                                          VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER,
                                                          VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                                          VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER});
    CHECK_THROWS_WITH_AS(shaders::find("no_such_shader"), doctest::Contains("no_such_shader"), Error);
    std::vector<uint32_t> truncated(shaders::find("axpy_f32").begin(), shaders::find("axpy_f32").begin() + 9);
    CHECK_THROWS_AS(gpu::reflect("truncated", truncated), Error);
}

TEST_CASE("a specialization constant changes the result exactly, and each specialization is its own pipeline") {
    std::vector<float> x(1000), y(1000);
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(i) - 500.0f, y[i] = float(i % 7);
    gpu::PipelineCache& cache = test::device().pipelines();
    const gpu::Pipeline& plain = cache.get("axpy_f32", {{0, 64}});
    const gpu::Pipeline& tripled = cache.get("axpy_f32", {{0, 32}, {3, std::bit_cast<uint32_t>(3.0f)}});
    CHECK(&plain != &tripled);
    CHECK(&plain == &cache.get("axpy_f32", {{0, 64}}));
    CHECK(tripled.local_size[0] == 32);
    std::vector<float> got_plain = run_axpy(plain, x, y, 0.5f), got_tripled = run_axpy(tripled, x, y, 0.5f);
    for (size_t i = 0; i < x.size(); ++i) {
        REQUIRE(got_plain[i] == 0.5f * x[i] + y[i]);
        REQUIRE(got_tripled[i] == 0.5f * x[i] * 3.0f + y[i]);
    }
}

TEST_CASE("the fp16 variant and its forced fp32 fallback agree with the reference") {
    std::vector<float> x = test::random_floats(4099, 7), y = test::random_floats(4099, 8);
    std::vector<float> want(x.size());
    for (size_t i = 0; i < x.size(); ++i) want[i] = 1.5f * x[i] + y[i];

    std::vector<float> fallback = run_axpy(test::device().pipelines().get("axpy_f32", {{0, 128}}), x, y, 1.5f);
    CHECK(test::relative_error(fallback, want) <= 1e-6);
    if (test::device().caps().use_float16()) {
        std::vector<float> half = run_axpy(test::device().pipelines().get("axpy_f16", {{0, 128}}), x, y, 1.5f);
        double error = test::relative_error(half, want);
        CHECK(error <= 2e-3);
        CHECK(error > 0);  // it really ran in half precision
    }
}

TEST_CASE("the pipeline cache is written, read back, and rejected and rebuilt for another driver") {
    auto directory = std::filesystem::temp_directory_path() / "vkllm-pipeline-cache-test";
    std::filesystem::remove_all(directory);
    std::string previous = getenv("VKLLM_CACHE_DIR") ? getenv("VKLLM_CACHE_DIR") : "";
    setenv("VKLLM_CACHE_DIR", directory.c_str(), 1);
    std::filesystem::path path;
    {
        gpu::Device device(test::instance());
        CHECK(device.pipelines().load_result() == gpu::CacheLoad::Absent);
        device.pipelines().get("axpy_f32", {{0, 64}});
        path = device.pipelines().path();
    }
    REQUIRE(std::filesystem::exists(path));
    {
        gpu::Device device(test::instance());
        CHECK(device.pipelines().load_result() == gpu::CacheLoad::Loaded);
    }
    {
        // Our header holds the driver version at byte 16: pretend another driver wrote the file.
        std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
        file.seekp(16);
        uint32_t other_driver = test::device().caps().driver_version + 1;
        file.write(reinterpret_cast<const char*>(&other_driver), sizeof other_driver);
    }
    {
        gpu::Device device(test::instance());
        CHECK(device.pipelines().load_result() == gpu::CacheLoad::Rejected);
    }
    {
        gpu::Device device(test::instance());
        CHECK(device.pipelines().load_result() == gpu::CacheLoad::Loaded);  // rewritten when rejected
    }
    std::filesystem::resize_file(path, 20);
    {
        gpu::Device device(test::instance());
        CHECK(device.pipelines().load_result() == gpu::CacheLoad::Rejected);
    }
    setenv("VKLLM_CACHE_DIR", previous.c_str(), 1);
    std::filesystem::remove_all(directory);
}
