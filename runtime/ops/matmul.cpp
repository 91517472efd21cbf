#include "ops/matmul.h"

#include <algorithm>

#include "core/error.h"
#include "gpu/capabilities.h"
#include "gpu/device.h"
#include "gpu/pipeline.h"
#include "params.h"

namespace vkllm::ops {

namespace {

constexpr uint32_t outputs_per_lane = 4;  // TM and TN in shaders/matmul_body.glsl
constexpr uint32_t lane_rows = 8;         // TM in shaders/matmul_lanes.glsl
constexpr uint32_t tile_line_bytes = 9 * 16;  // TILE_STRIDE vec4s of fp32
constexpr uint32_t max_lane_tokens = 16;      // MAX_TOKENS in shaders/matmul_lanes.glsl
// Units of 32 columns one dispatch sums over. A unit costs each invocation about 14 loop iterations
// and lavapipe silently stops loops (after 65535 iterations for these kernels, 21845 for a loop in
// ../shared/docs/lavapipe.md), so longer rows take several dispatches.
constexpr uint32_t max_units_per_dispatch = 768;

// The texel-read variant (shaders/matmul_lanes.glsl) gives each invocation 8 rows and all the tile's
// tokens; the storage one (matmul_body.glsl) 4 x 4 of the tile, staged in shared memory.
uint32_t workgroup_size(const MatmulConfig& config) {
    if (config.texel_reads) return config.tile_rows / lane_rows;
    return config.tile_rows / outputs_per_lane * (config.tile_tokens / outputs_per_lane);
}

uint64_t shared_bytes(const MatmulConfig& config) {
    return config.texel_reads ? 0 : uint64_t(config.tile_rows + config.tile_tokens) * tile_line_bytes;
}

bool fits_device(const MatmulConfig& config, const gpu::Capabilities& caps) {
    const uint32_t invocations = workgroup_size(config);
    return invocations <= caps.max_workgroup_invocations && invocations <= caps.max_workgroup_size[0] &&
           shared_bytes(config) <= caps.max_shared_memory;
}

void check_config(const MatmulConfig& config, const gpu::Capabilities& caps, gguf::GgmlType type) {
    const bool tokens_fit = config.texel_reads ? config.tile_tokens <= max_lane_tokens
                                               : config.tile_tokens % outputs_per_lane == 0;
    const uint32_t rows_per_lane = config.texel_reads ? lane_rows : outputs_per_lane;
    if (config.tile_rows == 0 || config.tile_tokens == 0 || config.tile_rows % rows_per_lane != 0 || !tokens_fit)
        fail("matmul: a {} x {} tile does not fit the {} kernel", config.tile_rows, config.tile_tokens,
             config.texel_reads ? "texel-read" : "shared-memory");
    if (!fits_device(config, caps))
        fail("matmul: a {} x {} tile needs {} invocations and {} bytes of shared memory, more than the device has",
             config.tile_rows, config.tile_tokens, workgroup_size(config), shared_bytes(config));
    if (config.float16 && !(caps.use_float16() && has_f16_variant(type)))
        fail("matmul: the fp16 variant for {} weights is not available on this device", gguf::type_name(type));
}

}  // namespace

MatmulConfig matmul_config(const gpu::Capabilities& caps, gguf::GgmlType type) {
    // fp16 arithmetic only adds conversions on a CPU.
    const bool cpu = caps.type == VK_PHYSICAL_DEVICE_TYPE_CPU;
    const bool float16 = !cpu && caps.use_float16() && has_f16_variant(type);
    // Reading through texel buffers (CPU devices), the register-tiled kernel: 8 lanes of 8 rows, 16
    // tokens each, so each unit of weights is decoded once for 16 tokens (4 rows x 4 tokens ran q4_0
    // and q8_0 at 31% and 26% of the FMA rate, 8 x 16 at 51% and 53%; 32 tokens gained 2 points for
    // twice the code). A GPU made to read texels gets 4 tokens, which fit its registers.
    if (caps.texel_reads())
        return {.tile_rows = 8 * lane_rows, .tile_tokens = cpu ? max_lane_tokens : 4, .float16 = float16,
                .texel_reads = true};
    if (cpu) return {.tile_rows = 32, .tile_tokens = 32, .float16 = false, .texel_reads = false};
    // 64 x 64 tiles, halved (tokens first) on devices with smaller workgroups or shared memory.
    MatmulConfig config{.tile_rows = 64, .tile_tokens = 64, .float16 = float16, .texel_reads = false};
    while (!fits_device(config, caps) && config.tile_tokens > outputs_per_lane) config.tile_tokens /= 2;
    while (!fits_device(config, caps) && config.tile_rows > outputs_per_lane) config.tile_rows /= 2;
    return config;
}

std::string matmul_pipeline_name(gguf::GgmlType type, const MatmulConfig& config) {
    return weight_pipeline_name("matmul", type, config.float16, config.texel_reads);
}

std::vector<graph::Dispatch> matmul(gpu::Device& device, const WeightMatrix& weights, const graph::Region& x,
                                    const graph::Region& y, uint32_t n_tokens, bool accumulate,
                                    std::optional<MatmulConfig> config) {
    const gpu::Capabilities& caps = device.caps();
    const std::vector<WeightSegment> segments = weight_segments(weights, "matmul");
    if (n_tokens == 0) fail("matmul: no tokens");
    const uint64_t x_bytes = uint64_t(n_tokens) * weights.cols * 4, y_bytes = uint64_t(n_tokens) * weights.rows * 4;
    if (x.size < x_bytes || y.size < y_bytes)
        fail("matmul: {} x {} weights and {} tokens need x of {} bytes and y of {} bytes, got {} and {}",
             weights.rows, weights.cols, n_tokens, x_bytes, y_bytes, x.size, y.size);
    // Element indices are 32-bit in the kernel.
    if (x_bytes / 4 > UINT32_MAX || y_bytes / 4 > UINT32_MAX)
        fail("matmul: {} tokens of {} x {} weights exceed 2^32 elements", n_tokens, weights.rows, weights.cols);
    const MatmulConfig launch = config ? *config : matmul_config(caps, weights.type);
    check_config(launch, caps, weights.type);

    const gpu::Pipeline& pipeline = device.pipelines().get(
        matmul_pipeline_name(weights.type, launch),
        {{0, workgroup_size(launch)}, {3, launch.tile_rows}, {4, launch.tile_tokens}});
    const uint32_t token_groups = (n_tokens + launch.tile_tokens - 1) / launch.tile_tokens;
    const uint32_t units = (weights.cols + weight_unit_elems - 1) / weight_unit_elems;
    std::vector<graph::Dispatch> dispatches;
    for (const WeightSegment& segment : segments) {
        const uint32_t row_groups = (segment.row_count + launch.tile_rows - 1) / launch.tile_rows;
        if (row_groups > caps.max_workgroup_count[0] || token_groups > caps.max_workgroup_count[1])
            fail("matmul: {} x {} workgroups exceed the device's dispatch limits", row_groups, token_groups);
        // Each piece of k after the first adds to what the previous ones wrote.
        for (uint32_t unit_begin = 0; unit_begin < units; unit_begin += max_units_per_dispatch) {
            const bool add = accumulate || unit_begin > 0;
            graph::Dispatch& dispatch = dispatches.emplace_back();
            dispatch.pipeline = &pipeline;
            dispatch.bindings = {{segment.region, gpu::Access::Read},
                                 {x, gpu::Access::Read},
                                 {y, add ? gpu::Access::ReadWrite : gpu::Access::Write}};
            dispatch.params(params::MatmulParams{
                .cols = weights.cols, .rows = weights.rows, .row_count = segment.row_count,
                .row_offset = segment.row_offset, .n_tokens = n_tokens, .unit_begin = unit_begin,
                .unit_end = std::min(units, unit_begin + max_units_per_dispatch), .accumulate = add});
            dispatch.groups = {row_groups, token_groups, 1};
        }
    }
    return dispatches;
}

}  // namespace vkllm::ops
