#pragma once
// Prefill on cooperative matrices (VK_KHR_cooperative_matrix: NVIDIA's tensor cores, RDNA3's WMMA,
// Intel's XMX): shaders/matmul_coopmat.comp and attn_prefill_coopmat.comp stage f16 tiles in shared
// memory and sum their products in f32, each subgroup a product of a shape the device reports
// (shaders/coopmat.glsl). The graph takes them where gpu::Capabilities::coopmat_kernels: by default
// where the device reports the products, unless VKLLM_COOPMAT=0 (README, "Cooperative matrices"); F32
// weights keep the FMA kernels. Their COOPMAT_EMULATED builds do each product in plain arithmetic and
// run anywhere with fp16 arithmetic, for the tests on devices without matrix units.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpu/capabilities.h"
#include "gpu/pipeline.h"

namespace vkllm::ops {

// The product one subgroup computes, M x K times K x N (M, N and K multiples of 4, K dividing 32),
// and the subgroup: its lanes, which the pipelines require of devices whose subgroup size varies.
struct CoopmatShape {
    uint32_t m = 16, n = 16, k = 16;
    uint32_t subgroup_size = 32;
    bool emulated = false;  // the COOPMAT_EMULATED pipelines
};

// The device's shape (gpu::Capabilities::coopmat_f16_shape) at its subgroup size where its
// cooperative-matrix kernels are on; nullopt elsewhere.
std::optional<CoopmatShape> coopmat_shape(const gpu::Capabilities& caps);
// Refuses, naming `op`, a shape the device cannot run: a product it does not report or kernels it has
// off (emulated: no fp16 arithmetic), a shape the kernels cannot tile, a subgroup size it cannot
// require.
void check_coopmat_shape(const CoopmatShape& shape, const gpu::Capabilities& caps, std::string_view op);
// `kernel` with "_emulated" for an emulated shape ("matmul_coopmat" -> "matmul_coopmat_emulated").
std::string coopmat_kernel_name(std::string_view kernel, const CoopmatShape& shape);
// A cooperative-matrix pipeline of `subgroups` whole subgroups: the workgroup size (spec constant 0)
// and `spec`, the required subgroup size where it varies.
gpu::PipelineOptions coopmat_pipeline_options(const CoopmatShape& shape, const gpu::Capabilities& caps,
                                              uint32_t subgroups, std::vector<gpu::SpecConstant> spec);

}  // namespace vkllm::ops
