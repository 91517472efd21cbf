#include "ops/coopmat.h"

#include <algorithm>
#include <fmt/format.h>

#include "core/error.h"

namespace vkllm::ops {

namespace {

bool varying_subgroups(const gpu::Capabilities& caps) { return caps.min_subgroup_size != caps.max_subgroup_size; }

bool reported(const CoopmatShape& shape, const gpu::Capabilities& caps) {
    return std::ranges::any_of(caps.cooperative_matrix_shapes, [&](const gpu::CooperativeMatrixShape& s) {
        return s.f16_into_f32() && s.m == shape.m && s.n == shape.n && s.k == shape.k;
    });
}

}  // namespace

std::optional<CoopmatShape> coopmat_shape(const gpu::Capabilities& caps) {
    if (!caps.coopmat_kernels()) return std::nullopt;
    const gpu::CooperativeMatrixShape shape = *caps.coopmat_f16_shape();
    return CoopmatShape{.m = shape.m, .n = shape.n, .k = shape.k, .subgroup_size = caps.subgroup_size};
}

void check_coopmat_shape(const CoopmatShape& shape, const gpu::Capabilities& caps, std::string_view op) {
    if (shape.emulated) {
        if (!caps.use_float16())
            fail("{}: the emulated cooperative-matrix kernels need fp16 arithmetic, which {} lacks or has off", op,
                 caps.name);
    } else if (!caps.cooperative_matrix) {
        fail("{}: {} has no cooperative matrices (VK_KHR_cooperative_matrix)", op, caps.name);
    } else if (!caps.coopmat_kernels()) {
        fail("{}: the cooperative-matrix kernels are off on {} (VKLLM_COOPMAT=0, or this build lacks them)",
             op, caps.name);
    } else if (!reported(shape, caps)) {
        fail("{}: {} reports no {}x{}x{} f16 product into f32", op, caps.name, shape.m, shape.n, shape.k);
    }
    if (shape.m % 4 != 0 || shape.n % 4 != 0 || shape.k % 4 != 0 || shape.m == 0 || shape.n == 0 || shape.k == 0 ||
        32 % shape.k != 0)
        fail("{}: products of {}x{}x{} do not tile the kernels (multiples of 4, K dividing 32)", op, shape.m, shape.n,
             shape.k);
    const bool size_ok = varying_subgroups(caps) ? caps.subgroup_size_control &&
                                                       shape.subgroup_size >= caps.min_subgroup_size &&
                                                       shape.subgroup_size <= caps.max_subgroup_size
                                                 : shape.subgroup_size == caps.subgroup_size;
    if (!size_ok) fail("{}: {} cannot run subgroups of {} lanes", op, caps.name, shape.subgroup_size);
}

std::string coopmat_kernel_name(std::string_view kernel, const CoopmatShape& shape) {
    return fmt::format("{}{}", kernel, shape.emulated ? "_emulated" : "");
}

gpu::PipelineOptions coopmat_pipeline_options(const CoopmatShape& shape, const gpu::Capabilities& caps,
                                              uint32_t subgroups, std::vector<gpu::SpecConstant> spec) {
    spec.insert(spec.begin(), {0, subgroups * shape.subgroup_size});
    return {.spec = std::move(spec),
            .required_subgroup_size = varying_subgroups(caps) ? shape.subgroup_size : 0,
            .full_subgroups = caps.compute_full_subgroups};
}

}  // namespace vkllm::ops
