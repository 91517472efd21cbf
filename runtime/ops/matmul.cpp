#include "ops/matmul.h"

#include <algorithm>

#include "core/error.h"
#include "gpu/capabilities.h"
#include "gpu/device.h"
#include "gpu/pipeline.h"
#include "ops/tuning.h"
#include "params.h"

namespace vkllm::ops {

namespace {

constexpr uint32_t outputs_per_lane = 4;  // TM and TN in shaders/matmul_body.glsl
constexpr uint32_t lane_rows = 8;         // TM in shaders/matmul_lanes.glsl
constexpr uint32_t tile_line_bytes = 9 * 16;  // TILE_STRIDE vec4s of fp32
constexpr uint32_t max_lane_tokens = 16;      // MAX_TOKENS in shaders/matmul_lanes.glsl
constexpr uint32_t int8_block_words = 9;      // ACTIVATION_WORDS in shaders/matmul_q8.comp
constexpr uint32_t int8_tile_line_bytes = 10 * 4;  // TILE_STRIDE words and a scale
constexpr uint32_t coopmat_tile_line_bytes = 10 * 8;  // TILE_STRIDE f16vec4s in shaders/matmul_coopmat.comp
constexpr uint32_t quantize_workgroup_size = 64;
// Units of 32 columns one dispatch sums over. A unit costs each invocation about 14 loop iterations
// and lavapipe silently stops loops (after 65535 iterations for these kernels, 21845 for a loop in
// ../shared/docs/lavapipe.md), so longer rows take several dispatches.
constexpr uint32_t max_units_per_dispatch = 768;

// The expert variants' list of the tile's entries (every kernel has one; counted for the plain
// products too, which lack it), and the shared-memory kernels' staged tiles.
uint64_t shared_bytes(const MatmulConfig& config) {
    const uint64_t entry_list = uint64_t(config.tile_tokens) * 4;
    if (config.texel_reads) return entry_list;
    if (config.coopmat) {
        const uint64_t staged = uint64_t(config.subgroups_rows) * config.subgroups_tokens * config.coopmat->m *
                                config.coopmat->n * 4;
        return entry_list + uint64_t(config.tile_rows + config.tile_tokens) * coopmat_tile_line_bytes + staged;
    }
    return entry_list + uint64_t(config.tile_rows + config.tile_tokens) *
                            (config.int8_activations ? int8_tile_line_bytes : tile_line_bytes);
}

bool has_int8_kernel(gguf::GgmlType type) { return type == gguf::GgmlType::Q4_0 || type == gguf::GgmlType::Q8_0; }

bool fits_device(const MatmulConfig& config, const gpu::Capabilities& caps) {
    const uint32_t invocations = matmul_workgroup_size(config);
    return invocations <= caps.max_workgroup_invocations && invocations <= caps.max_workgroup_size[0] &&
           shared_bytes(config) <= caps.max_shared_memory;
}

// The shared-memory kernels' tile: 64 x 64, halved (tokens first) on devices with smaller workgroups or
// shared memory.
MatmulConfig shared_memory_tile(const gpu::Capabilities& caps, MatmulConfig config) {
    config.tile_rows = config.tile_tokens = 64;
    while (!fits_device(config, caps) && config.tile_tokens > outputs_per_lane) config.tile_tokens /= 2;
    while (!fits_device(config, caps) && config.tile_rows > outputs_per_lane) config.tile_rows /= 2;
    return config;
}

}  // namespace

bool int8_activations_pay(const gpu::Capabilities& caps, gguf::GgmlType type) {
    return has_int8_kernel(type) && caps.int8_matmul() && !caps.texel_reads() && !caps.coopmat_kernels();
}

uint32_t matmul_workgroup_size(const MatmulConfig& config) {
    if (config.coopmat) return config.subgroups_rows * config.subgroups_tokens * config.coopmat->subgroup_size;
    if (config.texel_reads) return config.tile_rows / lane_rows;
    return config.tile_rows / outputs_per_lane * (config.tile_tokens / outputs_per_lane);
}

void check_matmul_config(const MatmulConfig& config, const gpu::Capabilities& caps, gguf::GgmlType type,
                         std::string_view op) {
    if (config.coopmat) {
        check_coopmat_shape(*config.coopmat, caps, op);
        const CoopmatShape& shape = *config.coopmat;
        if (config.float16 || config.texel_reads || config.int8_activations)
            fail("{}: the cooperative-matrix kernel has no fp16, texel-read or int8 variant", op);
        if (config.subgroups_rows == 0 || config.subgroups_tokens == 0 || config.tile_rows == 0 ||
            config.tile_tokens == 0 || config.tile_rows % (config.subgroups_rows * shape.m) != 0 ||
            config.tile_tokens % (config.subgroups_tokens * shape.n) != 0)
            fail("{}: a {} x {} tile is no whole block of {}x{} products for each of {} x {} subgroups", op,
                 config.tile_rows, config.tile_tokens, shape.m, shape.n, config.subgroups_rows, config.subgroups_tokens);
        if (!fits_device(config, caps))
            fail("{}: a {} x {} tile needs {} invocations and {} bytes of shared memory, more than the device has", op,
                 config.tile_rows, config.tile_tokens, matmul_workgroup_size(config), shared_bytes(config));
        return;
    }
    if (config.int8_activations && !(has_int8_kernel(type) && caps.integer_dot_product && !config.texel_reads &&
                                     !config.float16))
        fail("{}: int8 activations need Q4_0 or Q8_0 weights (got {}), the storage-read fp32 kernel and a device "
             "with integer dot products",
             op, gguf::type_name(type));
    const bool tokens_fit = config.texel_reads ? config.tile_tokens <= max_lane_tokens
                                               : config.tile_tokens % outputs_per_lane == 0;
    const uint32_t rows_per_lane = config.texel_reads ? lane_rows : outputs_per_lane;
    if (config.tile_rows == 0 || config.tile_tokens == 0 || config.tile_rows % rows_per_lane != 0 || !tokens_fit)
        fail("{}: a {} x {} tile does not fit the {} kernel", op, config.tile_rows, config.tile_tokens,
             config.texel_reads ? "texel-read" : "shared-memory");
    if (!fits_device(config, caps))
        fail("{}: a {} x {} tile needs {} invocations and {} bytes of shared memory, more than the device has", op,
             config.tile_rows, config.tile_tokens, matmul_workgroup_size(config), shared_bytes(config));
    if (config.float16 && !(caps.use_float16() && has_f16_variant(type)))
        fail("{}: the fp16 variant for {} weights is not available on this device", op, gguf::type_name(type));
}

MatmulConfig matmul_config(const gpu::Capabilities& caps, gguf::GgmlType type, bool int8_activations) {
    if (int8_activations) return shared_memory_tile(caps, {.int8_activations = true});
    // F32 weights keep the FMA kernels: through f16 products gemma3_f32 missed its 1e-3 (1.5e-3, H200).
    if (std::optional<CoopmatShape> shape = coopmat_shape(caps); shape && type != gguf::GgmlType::F32)
        return coopmat_matmul_config(*shape);
    // fp16 arithmetic only adds conversions on a CPU.
    const bool cpu = caps.type == VK_PHYSICAL_DEVICE_TYPE_CPU;
    const bool float16 = !cpu && caps.use_float16() && has_f16_variant(type);
    // Reading through texel buffers (CPU devices), the register-tiled kernel: 8 lanes of 8 rows, 16
    // tokens each, so each unit of weights is decoded once for 16 tokens (4 rows x 4 tokens ran q4_0
    // and q8_0 at 31% and 26% of the FMA rate, 8 x 16 at 51% and 53%; 32 tokens gained 2 points for
    // twice the code). A GPU made to read texels gets 4 tokens, which fit its registers.
    MatmulConfig config;
    if (caps.texel_reads())
        config = {.tile_rows = 8 * lane_rows, .tile_tokens = cpu ? max_lane_tokens : 4, .float16 = float16,
                  .texel_reads = true};
    else if (cpu)
        config = {.tile_rows = 32, .tile_tokens = 32, .float16 = false, .texel_reads = false};
    else
        config = shared_memory_tile(caps, {.float16 = float16});
    if (std::optional<TunedMatmul> tuned = tuned_matmul(caps, type, config.texel_reads)) {  // vkllm tune's measure
        config.tile_rows = tuned->tile_rows;
        config.tile_tokens = tuned->tile_tokens;
    }
    return config;
}

MatmulConfig coopmat_matmul_config(const CoopmatShape& shape) {
    constexpr uint32_t subgroups = 2, block = 2;
    return {.tile_rows = subgroups * block * shape.m, .tile_tokens = subgroups * block * shape.n, .coopmat = shape,
            .subgroups_rows = subgroups, .subgroups_tokens = subgroups};
}

std::string matmul_pipeline_name(gguf::GgmlType type, const MatmulConfig& config, bool expert_ids) {
    if (config.coopmat)
        return weight_pipeline_name(coopmat_kernel_name(expert_ids ? "matmul_id_coopmat" : "matmul_coopmat",
                                                        *config.coopmat),
                                    type, false, false);
    const std::string_view op = config.int8_activations ? (expert_ids ? "matmul_q8_id" : "matmul_q8")
                                                        : (expert_ids ? "matmul_id" : "matmul");
    return weight_pipeline_name(op, type, config.float16, config.texel_reads);
}

const gpu::Pipeline& matmul_pipeline(gpu::Device& device, gguf::GgmlType type, const MatmulConfig& config,
                                     bool expert_ids) {
    const std::string name = matmul_pipeline_name(type, config, expert_ids);
    if (!config.coopmat)
        return device.pipelines().get(
            name, {{0, matmul_workgroup_size(config)}, {3, config.tile_rows}, {4, config.tile_tokens}});
    const CoopmatShape& shape = *config.coopmat;
    return device.pipelines().get(
        name, coopmat_pipeline_options(shape, device.caps(), config.subgroups_rows * config.subgroups_tokens,
                                       {{3, config.tile_rows}, {4, config.tile_tokens}, {5, shape.m}, {6, shape.n},
                                        {7, shape.k}, {8, config.subgroups_rows}, {9, config.subgroups_tokens}}));
}

uint64_t int8_activation_bytes(uint64_t n_tokens, uint32_t cols) {
    return n_tokens * (cols / weight_unit_elems) * int8_block_words * 4;
}

graph::Dispatch quantize_q8(gpu::Device& device, const graph::Region& x, const graph::Region& x_int8,
                            uint32_t n_tokens, uint32_t cols) {
    const uint64_t blocks = uint64_t(n_tokens) * (cols / weight_unit_elems);
    if (blocks == 0 || cols % weight_unit_elems != 0)
        fail("quantize_q8: {} tokens of {} values (a positive multiple of {})", n_tokens, cols, weight_unit_elems);
    if (blocks > UINT32_MAX / int8_block_words) fail("quantize_q8: {} blocks exceed 32-bit indices", blocks);
    if (x.size < blocks * weight_unit_elems * 4 || x_int8.size < int8_activation_bytes(n_tokens, cols))
        fail("quantize_q8: {} tokens of {} values need x of {} bytes and an output of {}, got {} and {}", n_tokens,
             cols, blocks * weight_unit_elems * 4, int8_activation_bytes(n_tokens, cols), x.size, x_int8.size);
    graph::Dispatch dispatch;
    dispatch.pipeline = &device.pipelines().get("quantize_q8", {{0, quantize_workgroup_size}});
    dispatch.bindings = {{x, gpu::Access::Read}, {x_int8, gpu::Access::Write}};
    dispatch.params(params::QuantizeQ8Params{.blocks = uint32_t(blocks)});
    dispatch.groups = group_grid((blocks + quantize_workgroup_size - 1) / quantize_workgroup_size, device.caps());
    return dispatch;
}

std::vector<graph::Dispatch> matmul(gpu::Device& device, const WeightMatrix& weights, const graph::Region& x,
                                    const graph::Region& y, uint32_t n_tokens, bool accumulate,
                                    std::optional<MatmulConfig> config) {
    const gpu::Capabilities& caps = device.caps();
    const std::vector<WeightSegment> segments = weight_segments(weights, "matmul");
    if (n_tokens == 0) fail("matmul: no tokens");
    const MatmulConfig launch = config ? *config : matmul_config(caps, weights.type);
    const uint64_t x_bytes = launch.int8_activations ? int8_activation_bytes(n_tokens, weights.cols)
                                                     : uint64_t(n_tokens) * weights.cols * 4;
    const uint64_t y_bytes = uint64_t(n_tokens) * weights.rows * 4;
    if (x.size < x_bytes || y.size < y_bytes)
        fail("matmul: {} x {} weights and {} tokens need x of {} bytes and y of {} bytes, got {} and {}",
             weights.rows, weights.cols, n_tokens, x_bytes, y_bytes, x.size, y.size);
    // Element indices are 32-bit in the kernel.
    if (x_bytes / 4 > UINT32_MAX || y_bytes / 4 > UINT32_MAX)
        fail("matmul: {} tokens of {} x {} weights exceed 2^32 elements", n_tokens, weights.rows, weights.cols);
    check_matmul_config(launch, caps, weights.type, "matmul");

    const gpu::Pipeline& pipeline = matmul_pipeline(device, weights.type, launch);
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

std::vector<graph::Dispatch> matmul_int8(gpu::Device& device, const WeightMatrix& weights, const graph::Region& x,
                                         const graph::Region& x_int8, const graph::Region& y, uint32_t n_tokens,
                                         bool accumulate, std::optional<MatmulConfig> config) {
    std::vector<graph::Dispatch> dispatches = {quantize_q8(device, x, x_int8, n_tokens, weights.cols)};
    for (graph::Dispatch& dispatch : matmul(device, weights, x_int8, y, n_tokens, accumulate,
                                            config.value_or(matmul_config(device.caps(), weights.type, true))))
        dispatches.push_back(std::move(dispatch));
    return dispatches;
}

}  // namespace vkllm::ops
