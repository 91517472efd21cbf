#include "ops/rope.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "core/error.h"
#include "gpu/device.h"
#include "ops/matvec.h"
#include "ops/workgroup.h"
#include "params.h"

namespace vkllm::ops {

namespace {

constexpr uint32_t preferred_workgroup_size = 256;

void check_config(const RopeConfig& config, uint32_t head_dim) {
    if (config.n_dims == 0 || config.n_dims % 2 != 0 || config.n_dims > head_dim)
        fail("rope: {} rotated dims in heads of {} (must be even, 2 to head_dim)", config.n_dims, head_dim);
    if (!config.freq_factors.empty() && config.freq_factors.size() != config.n_dims / 2)
        fail("rope: {} frequency factors for {} rotated pairs", config.freq_factors.size(), config.n_dims / 2);
    if (config.ext_factor != 0.0f && config.n_ctx_orig == 0) fail("rope: YaRN needs the original context length");
}

// Pair i's angle per position in radians, in double (model-notes.md B.2 with pos = 1).
double pair_frequency(const RopeConfig& config, const RopeCorrDims& corr, uint32_t i) {
    double extrapolated = std::pow(double(config.freq_base), -2.0 * i / config.n_dims);
    if (!config.freq_factors.empty()) extrapolated /= config.freq_factors[i];
    double interpolated = config.freq_scale * extrapolated;
    if (config.ext_factor == 0.0f) return interpolated;
    double ramp = 1.0 - std::clamp((i - corr.lo) / std::max(0.001, double(corr.hi) - corr.lo), 0.0, 1.0);
    double mix = ramp * config.ext_factor;
    return interpolated * (1.0 - mix) + extrapolated * mix;
}

}  // namespace

std::vector<uint32_t> rope_phase_table(const RopeConfig& config) {
    check_config(config, config.n_dims);
    const RopeCorrDims corr = config.ext_factor != 0.0f ? rope_corr_dims(config) : RopeCorrDims{0, 0};
    std::vector<uint32_t> table;
    for (uint32_t i = 0; i < config.n_dims / 2; ++i) {
        const double turns = pair_frequency(config, corr, i) / (2.0 * std::numbers::pi);
        const double high = std::ldexp(turns - std::floor(turns), 32);  // exact scalings of a double
        const double low = std::ldexp(high - std::floor(high), 32);
        table.push_back(uint32_t(low));
        table.push_back(uint32_t(high));
    }
    return table;
}

float rope_mscale(const RopeConfig& config) {
    if (config.ext_factor == 0.0f) return config.attn_factor;
    return float(config.attn_factor * (1.0 + 0.1 * std::log(1.0 / config.freq_scale)));
}

graph::Dispatch rope(gpu::Device& device, const RopeConfig& config, const RopeShape& shape, const graph::Region& phases,
                     const graph::Region& positions, const graph::Region& x) {
    check_config(config, shape.head_dim);
    const uint32_t stride = shape.token_stride ? shape.token_stride : shape.n_head * shape.head_dim;
    if (stride < shape.n_head * shape.head_dim) fail("rope: tokens {} floats apart hold fewer than their heads", stride);
    if (phases.size < uint64_t(config.n_dims) * 4 || positions.size < uint64_t(shape.n_tokens) * 4 ||
        x.size < (uint64_t(shape.n_tokens) - 1) * stride * 4 + uint64_t(shape.n_head) * shape.head_dim * 4)
        fail("rope: buffers too small for {} tokens of {} heads of {}", shape.n_tokens, shape.n_head, shape.head_dim);
    graph::Dispatch dispatch;
    const uint32_t workgroup_size = flat_workgroup_size(device.caps(), preferred_workgroup_size);
    dispatch.pipeline =
        &device.pipelines().get("rope", {{0, workgroup_size}, {3, config.mode == RopeMode::Neox ? 1u : 0u}});
    dispatch.bindings = {{phases, gpu::Access::Read}, {positions, gpu::Access::Read}, {x, gpu::Access::ReadWrite}};
    dispatch.params(params::RopeParams{.n_tokens = shape.n_tokens, .n_head = shape.n_head, .head_dim = shape.head_dim,
                                       .n_dims = config.n_dims, .token_stride = stride,
                                       .mscale = rope_mscale(config)});
    const uint64_t pairs = uint64_t(shape.n_tokens) * shape.n_head * (config.n_dims / 2);
    dispatch.groups = group_grid((pairs + workgroup_size - 1) / workgroup_size, device.caps());
    return dispatch;
}

graph::Dispatch attn_temp(gpu::Device& device, const graph::Region& positions, const graph::Region& x,
                          uint32_t n_tokens, uint32_t row, float beta, uint32_t floor_length) {
    if (floor_length == 0) fail("attn_temp: a zero temperature length");
    if (positions.size < uint64_t(n_tokens) * 4 || x.size < uint64_t(n_tokens) * row * 4)
        fail("attn_temp: buffers too small for {} tokens of {}", n_tokens, row);
    graph::Dispatch dispatch;
    const uint32_t workgroup_size = flat_workgroup_size(device.caps(), preferred_workgroup_size);
    dispatch.pipeline = &device.pipelines().get("attn_temp", {{0, workgroup_size}});
    dispatch.bindings = {{positions, gpu::Access::Read}, {x, gpu::Access::ReadWrite}};
    dispatch.params(params::AttnTempParams{.n_tokens = n_tokens, .row = row, .floor_length = floor_length,
                                           .beta = beta});
    dispatch.groups = group_grid((uint64_t(n_tokens) * row + workgroup_size - 1) / workgroup_size, device.caps());
    return dispatch;
}

}  // namespace vkllm::ops
