// The host side of prefill on cooperative matrices (ops/coopmat.h): the shape and tile a device with
// matrix units gets, and the refusals where a device cannot run them. "A device with matrix units" is
// this device's capabilities with the products NVIDIA's driver reports added (never opened), so the
// choices are checked on any device; the kernels themselves run in test_matmul, test_moe and
// test_attention (the device's own where it has them, else their emulated builds).
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

#include "core/error.h"
#include "op_harness.h"
#include "ops/attention.h"
#include "ops/coopmat.h"
#include "ops/expert_matmul.h"
#include "ops/matmul.h"

using namespace vkllm;

namespace {

constexpr uint32_t f16 = 0, f32 = 1, subgroup_scope = 3;

// This device's capabilities with the kernels on and NVIDIA's f16 products (16x16x16 and 16x8x16;
// 16x16x16 into f16 too), as if VKLLM_COOPMAT=1 had found them.
gpu::Capabilities with_matrix_units(gpu::Capabilities caps) {
    caps.cooperative_matrix = caps.float16 = caps.vulkan_memory_model = true;
    caps.cooperative_matrix_shapes = {
        {.m = 16, .n = 8, .k = 16, .a_type = f16, .b_type = f16, .c_type = f32, .result_type = f32, .scope = subgroup_scope},
        {.m = 16, .n = 16, .k = 16, .a_type = f16, .b_type = f16, .c_type = f16, .result_type = f16, .scope = subgroup_scope},
        {.m = 16, .n = 16, .k = 16, .a_type = f16, .b_type = f16, .c_type = f32, .result_type = f32, .scope = subgroup_scope}};
    caps.cooperative_matrix_kernels = true;
    caps.float16_kernels = true;
    return caps;
}

}  // namespace

TEST_CASE("cooperative matrices: the device's product and tile, chosen only where the kernels are on") {
    gpu::Capabilities caps = with_matrix_units(test::device().caps());
    const std::optional<ops::CoopmatShape> shape = ops::coopmat_shape(caps);
    REQUIRE(shape);
    CHECK(shape->m == 16);
    CHECK(shape->n == 16);
    CHECK(shape->k == 16);
    CHECK(shape->subgroup_size == caps.subgroup_size);
    CHECK_FALSE(shape->emulated);

    // 2 x 2 subgroups of 2 x 2 products, for every weight type but F32, which keeps the FMA kernels.
    CHECK_FALSE(ops::matmul_config(caps, gguf::GgmlType::F32).coopmat);
    for (gguf::GgmlType type : test::weight_types) {
        if (type == gguf::GgmlType::F32) continue;
        const ops::MatmulConfig config = ops::matmul_config(caps, type);
        REQUIRE(config.coopmat);
        CHECK(config.tile_rows == 64);
        CHECK(config.tile_tokens == 64);
        CHECK(ops::matmul_workgroup_size(config) == 4 * caps.subgroup_size);
        CHECK(ops::matmul_pipeline_name(type, config).starts_with("matmul_coopmat_"));
        CHECK(ops::matmul_pipeline_name(type, config, true).starts_with("matmul_id_coopmat_"));
        CHECK_NOTHROW(ops::check_matmul_config(config, caps, type, "matmul"));
    }
    // Matrix units take Q4_0 and Q8_0 prefill from the int8 kernel.
    caps.int8_activation_matmul = true;
    caps.texel_buffer_reads = false;
    CHECK_FALSE(ops::int8_activations_pay(caps, gguf::GgmlType::Q4_0));
    // An expert's tile of tokens halves to what it gets, down to a whole product per subgroup.
    const ops::ExpertRows experts{.n_expert = 64, .expert_rows = 128, .row_begin = 0, .rows = 128};
    CHECK(ops::matmul_id_config(caps, gguf::GgmlType::Q4_K, experts, 512, 8).tile_tokens == 64);
    CHECK(ops::matmul_id_config(caps, gguf::GgmlType::Q4_K, experts, 10, 2).tile_tokens == 32);

    // Kernels off (VKLLM_COOPMAT=0): the FMA kernels, and the int8 path again.
    caps.cooperative_matrix_kernels = false;
    CHECK_FALSE(ops::coopmat_shape(caps));
    CHECK_FALSE(ops::matmul_config(caps, gguf::GgmlType::Q4_K).coopmat);
    CHECK(ops::int8_activations_pay(caps, gguf::GgmlType::Q4_0));
}

TEST_CASE("cooperative-matrix launches are refused where the device cannot run them") {
    gpu::Device& device = test::device();
    const gpu::Capabilities& here = device.caps();
    gpu::Buffer buffer = test::zero_buffer(1 << 16);
    test::OpGraph g;
    const graph::Region r = g(buffer);
    const ops::WeightMatrix q4_0 = g.weights(gguf::GgmlType::Q4_0, 64, 64, buffer);
    const ops::AttentionConfig heads{.n_head = 4, .n_head_kv = 2, .head_dim_k = 64, .head_dim_v = 64};
    const ops::AttentionShape shape{.n_tokens = 4, .n_cells = 8};
    const ops::CoopmatShape real =
        ops::coopmat_shape(here).value_or(ops::CoopmatShape{.m = 16, .n = 16, .k = 16, .subgroup_size = here.subgroup_size});

    // This device: its own product is taken where its kernels are on, refused naming why where not.
    if (here.coopmat_kernels()) {
        CHECK_NOTHROW(ops::matmul(device, q4_0, r, r, 64, false, ops::coopmat_matmul_config(real)));
        CHECK_NOTHROW(ops::attention_prefill(device, heads, shape, {r, r, r, r, r, r}, 0, real));
    } else {
        CHECK_THROWS_WITH_AS(ops::matmul(device, q4_0, r, r, 64, false, ops::coopmat_matmul_config(real)),
                             doctest::Contains(here.cooperative_matrix ? "are off" : "no cooperative matrices"), Error);
    }
    // A device without VK_KHR_cooperative_matrix (every profile but nvidia takes the matrix units away):
    // matmul and attention name what is missing.
    {
        const char* run_profile = std::getenv("VKLLM_DEVICE_PROFILE");
        const std::string saved_profile = run_profile ? run_profile : "";
        setenv("VKLLM_DEVICE_PROFILE", "amd", 1);
        gpu::Device without(test::instance());
        if (saved_profile.empty())
            unsetenv("VKLLM_DEVICE_PROFILE");
        else
            setenv("VKLLM_DEVICE_PROFILE", saved_profile.c_str(), 1);
        REQUIRE_FALSE(without.caps().cooperative_matrix);
        gpu::Buffer other = without.allocator().create(1 << 16, gpu::MemoryDomain::Device);
        test::OpGraph h(without);
        const graph::Region o = h(other);
        const ops::WeightMatrix weights = h.weights(gguf::GgmlType::Q4_0, 64, 64, other);
        CHECK_THROWS_WITH_AS(ops::matmul(without, weights, o, o, 64, false, ops::coopmat_matmul_config(real)),
                             doctest::Contains("no cooperative matrices"), Error);
        CHECK_THROWS_WITH_AS(ops::attention_prefill(without, heads, shape, {o, o, o, o, o, o}, 0, real),
                             doctest::Contains("no cooperative matrices"), Error);
    }
    // MLA's heads (576 and 512 dims) never fit the kernel's tiles: the device's kernel keeps them.
    ops::CoopmatShape emulated = real;
    emulated.m = emulated.n = emulated.k = 8;
    emulated.emulated = true;
    const ops::AttentionConfig mla{.n_head = 2, .n_head_kv = 1, .head_dim_k = 576, .head_dim_v = 512};
    if (here.use_float16())
        CHECK_THROWS_WITH_AS(ops::attention_prefill(device, mla, shape, {r, r, r, r, r, r}, 0, emulated),
                             doctest::Contains("do not fit the cooperative-matrix kernel"), Error);

    // A device with matrix units: kernels off, a product it does not report, shapes the kernels
    // cannot tile, a subgroup size it cannot run.
    gpu::Capabilities caps = with_matrix_units(here);
    CHECK_NOTHROW(ops::check_coopmat_shape(real, caps, "matmul"));
    gpu::Capabilities off = caps;
    off.cooperative_matrix_kernels = false;
    CHECK_THROWS_WITH_AS(ops::check_coopmat_shape(real, off, "matmul"), doctest::Contains("VKLLM_COOPMAT=0"), Error);
    CHECK_THROWS_WITH_AS(ops::check_coopmat_shape({.m = 32, .n = 8, .k = 16, .subgroup_size = real.subgroup_size},
                                                  caps, "matmul"),
                         doctest::Contains("reports no 32x8x16"), Error);
    CHECK_THROWS_WITH_AS(ops::check_coopmat_shape({.m = 6, .n = 8, .k = 8, .subgroup_size = real.subgroup_size,
                                                   .emulated = true}, caps, "matmul"),
                         doctest::Contains("do not tile"), Error);
    CHECK_THROWS_WITH_AS(ops::check_coopmat_shape({.m = 16, .n = 16, .k = 16, .subgroup_size = 2 * caps.max_subgroup_size},
                                                  caps, "matmul"),
                         doctest::Contains("subgroups of"), Error);
    gpu::Capabilities fp32_only = caps;
    fp32_only.float16_kernels = false;
    CHECK_THROWS_WITH_AS(ops::check_coopmat_shape(emulated, fp32_only, "matmul"), doctest::Contains("fp16"), Error);

    // Tiles: no fp16, texel or int8 variant; whole products per subgroup; the device's shared memory.
    ops::MatmulConfig config = ops::coopmat_matmul_config(real);
    config.float16 = true;
    CHECK_THROWS_WITH_AS(ops::check_matmul_config(config, caps, gguf::GgmlType::Q4_0, "matmul"),
                         doctest::Contains("no fp16"), Error);
    config = ops::coopmat_matmul_config(real);
    config.tile_rows = 48;
    CHECK_THROWS_WITH_AS(ops::check_matmul_config(config, caps, gguf::GgmlType::Q4_0, "matmul"),
                         doctest::Contains("no whole block"), Error);
    config.tile_rows = 32 * 1024;
    CHECK_THROWS_WITH_AS(ops::check_matmul_config(config, caps, gguf::GgmlType::Q4_0, "matmul"),
                         doctest::Contains("shared memory"), Error);
}
