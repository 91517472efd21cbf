#include "ops/matvec.h"

#include <algorithm>
#include <cctype>

#include "core/error.h"
#include "gpu/capabilities.h"
#include "gpu/device.h"
#include "gpu/pipeline.h"
#include "ops/tuning.h"
#include "params.h"

namespace vkllm::ops {

namespace {

// Columns of a row one invocation may loop over: at most 4096 steps (8-element slices), far below where
// lavapipe silently stops loops (65535 iterations for these kernels, 21845 for a loop in
// ../shared/docs/lavapipe.md); longer rows get more threads per row.
constexpr uint32_t max_cols_per_invocation = 32768;

// The smallest team that spans whole subgroups whatever size the driver picks.
uint32_t subgroup_team(const gpu::Capabilities& caps) {
    return std::max({caps.max_subgroup_size, caps.subgroup_size, 1u});
}

// Elements an invocation decodes per step of a row: a 32-element unit through texel reads (the CPU
// kernel), else the type's slice (SLICE_ELEMS in shaders/dequant_<type>.glsl).
uint32_t piece_elems(gguf::GgmlType type, bool texel_reads) {
    using enum gguf::GgmlType;
    if (texel_reads) return weight_unit_elems;
    if (type == F32 || type == F16 || type == BF16) return 8;
    if (type == Q4_K || type == Q5_K || type == Q6_K) return 32;
    return 16;
}

uint32_t row_pieces(gguf::GgmlType type, bool texel_reads, uint32_t cols) {
    const uint32_t elems = piece_elems(type, texel_reads);
    return (cols + elems - 1) / elems;
}

// Raises threads_per_row (and the workgroup to a multiple of it) until no invocation loops over more
// than max_cols_per_invocation columns of a row. Takes a config that passed check_matvec_config.
MatvecConfig fit_row_length(MatvecConfig config, const gpu::Capabilities& caps, gguf::GgmlType type, uint32_t cols) {
    const uint32_t pieces = row_pieces(type, config.texel_reads, cols), elems = piece_elems(type, config.texel_reads);
    uint32_t& team = config.threads_per_row;
    while ((pieces + team - 1) / team * elems > max_cols_per_invocation)
        team = team == 1 ? subgroup_team(caps) : 2 * team;
    config.workgroup_size = (config.workgroup_size + team - 1) / team * team;
    if (config.workgroup_size > caps.max_workgroup_invocations || config.workgroup_size > caps.max_workgroup_size[0])
        fail("matvec: rows of {} columns need {} threads per row, more than a workgroup of this device holds",
             cols, config.threads_per_row);
    return config;
}

}  // namespace

void check_matvec_config(const MatvecConfig& config, const gpu::Capabilities& caps, gguf::GgmlType type) {
    const uint32_t team = config.threads_per_row;
    if (team == 0 || (team != 1 && team % subgroup_team(caps) != 0) || config.workgroup_size % team != 0)
        fail("matvec: {} threads per row in a workgroup of {}: a team must be 1 thread or whole subgroups of {}",
             team, config.workgroup_size, subgroup_team(caps));
    if (config.rows_per_team == 0 || config.rows_per_team > matvec_max_rows_per_team)
        fail("matvec: {} rows per team (1 to {})", config.rows_per_team, matvec_max_rows_per_team);
    if (config.float16 && !(caps.use_float16() && has_f16_variant(type)))
        fail("matvec: the fp16 variant for {} weights is not available on this device", gguf::type_name(type));
    if (config.workgroup_size > caps.max_workgroup_invocations || config.workgroup_size > caps.max_workgroup_size[0])
        fail("matvec: a workgroup of {} invocations, more than the device's {}", config.workgroup_size,
             std::min(caps.max_workgroup_invocations, caps.max_workgroup_size[0]));
}

uint64_t weight_row_bytes(gguf::GgmlType type, uint32_t cols) { return gguf::row_bytes(type, cols); }

void check_weight_shape(gguf::GgmlType type, uint32_t rows, uint32_t cols, std::string_view op) {
    const std::string_view name = gguf::type_name(type);
    if (!gguf::runs_on_vkllm(type)) fail("{}: vkllm has no kernel for {} weights", op, name);
    if (rows == 0 || cols == 0) fail("{}: an empty {} x {} weight matrix", op, rows, cols);
    const uint32_t granularity = gguf::block_size(type) == 1 ? 4 : gguf::block_size(type);
    if (cols % granularity != 0)
        fail("{}: {} weights with {} columns: the kernels need a multiple of {}", op, name, cols, granularity);
}

WeightMatrix weight_matrix(graph::Graph& graph, const std::string& name, gguf::GgmlType type, uint32_t rows,
                           uint32_t cols, const gpu::Buffer& buffer) {
    check_weight_shape(type, rows, cols, fmt::format("weight '{}'", name));
    const uint64_t row_bytes = weight_row_bytes(type, cols);
    if (buffer.empty() || buffer.size() < row_bytes * rows)
        fail("weight '{}': a buffer of {} bytes cannot hold {} rows of {} bytes", name, buffer.size(), rows, row_bytes);
    if (buffer.segments().size() > 1 && buffer.segment_size() % row_bytes != 0)
        fail("weight '{}': split every {} bytes, not at a multiple of the {}-byte row", name, buffer.segment_size(),
             row_bytes);
    WeightMatrix matrix{type, rows, cols, {}};
    const auto& pieces = buffer.segments();
    for (size_t k = 0; k < pieces.size(); ++k) {
        // The kernels read whole 32-bit words; the allocator aligns every piece to at least 64 bytes,
        // so the word holding a segment's last byte is always allocated.
        gpu::BufferRange words = pieces[k];
        words.size = (words.size + 3) / 4 * 4;
        matrix.segments.push_back(graph.persistent(pieces.size() == 1 ? name : fmt::format("{}.{}", name, k), words));
    }
    return matrix;
}

std::vector<WeightSegment> weight_segments(const WeightMatrix& weights, std::string_view op) {
    check_weight_shape(weights.type, weights.rows, weights.cols, op);
    if (weights.segments.empty()) fail("{}: no weight buffer", op);
    const uint64_t row_bytes = weight_row_bytes(weights.type, weights.cols);
    std::vector<WeightSegment> segments;
    uint32_t row = 0;
    for (const graph::Region& region : weights.segments) {
        if (row == weights.rows) break;
        const auto row_count = uint32_t(std::min<uint64_t>(region.size / row_bytes, weights.rows - row));
        segments.push_back({region, row, row_count});
        row += row_count;
    }
    if (row < weights.rows) fail("{}: weight segments of {} rows, {} needed", op, row, weights.rows);
    return segments;
}

bool has_f16_variant(gguf::GgmlType type) {
    const gguf::WeightTypeInfo* info = gguf::find_weight_type(type);
    return info && info->fp16_kernels;
}

std::string weight_pipeline_name(std::string_view op, gguf::GgmlType type, bool float16, bool texel_reads) {
    std::string name = fmt::format("{}_{}{}{}", op, gguf::type_name(type), float16 ? "_f16" : "",
                                   texel_reads ? "_texel" : "");
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    return name;
}

std::array<uint32_t, 3> group_grid(uint64_t groups, const gpu::Capabilities& caps) {
    const uint64_t x = std::min<uint64_t>(groups, caps.max_workgroup_count[0]);
    const uint64_t y = (groups + x - 1) / x;
    if (y > caps.max_workgroup_count[1]) fail("{} workgroups exceed the device's dispatch limits", groups);
    return {uint32_t(x), uint32_t(y), 1};
}

MatvecConfig matvec_config(const gpu::Capabilities& caps, gguf::GgmlType type, uint32_t cols, uint32_t n_tokens) {
    MatvecConfig config;
    if (caps.type == VK_PHYSICAL_DEVICE_TYPE_CPU) {
        // lavapipe runs a subgroup as the SIMD lanes of one CPU thread: a row per lane needs no
        // reduction, eight rows per lane share each x fetch (a gather; 4 ran q4_0 20% and q8_0 2x slower,
        // 16 no faster), and fp16 arithmetic only adds conversions on a CPU (docs/PERFORMANCE.md).
        config = {.workgroup_size = 8, .threads_per_row = 1, .rows_per_team = 8, .float16 = false,
                  .texel_reads = caps.texel_reads()};
    } else {
        // One or more subgroups per row, so consecutive lanes read consecutive slices, widened until each
        // lane takes about 4 slices of a row: even a few thousand rows then keep enough loads in flight
        // to stream the weights, and the team's closing reduction stays small next to its steps. Two
        // rows per team share each x load; with several vectors the team's decoded slices stay in
        // registers for all of them, so rows of 32-element slices go one per team (two took 132 VGPRs on
        // RDNA3 for 2 vectors and spilled from 4).
        const uint32_t most = std::min({256u, caps.max_workgroup_invocations, caps.max_workgroup_size[0]});
        const uint32_t pieces = row_pieces(type, caps.texel_reads(), cols);
        uint32_t team = std::max(32u, subgroup_team(caps));
        while (2 * team <= most && pieces > 4 * team) team *= 2;
        const uint32_t rows = n_tokens > 1 && piece_elems(type, caps.texel_reads()) > 16 ? 1 : 2;
        config = {.workgroup_size = std::max(std::min(128u, most), team), .threads_per_row = team,
                  .rows_per_team = rows, .float16 = caps.use_float16() && has_f16_variant(type),
                  .texel_reads = caps.texel_reads()};
    }
    if (std::optional<TunedMatvec> tuned = tuned_matvec(caps, type, cols, n_tokens)) {  // vkllm tune's measure
        config.workgroup_size = tuned->workgroup_size;
        config.threads_per_row = tuned->threads_per_row;
        config.rows_per_team = tuned->rows_per_team;
    }
    return fit_row_length(config, caps, type, cols);
}

bool matvec_glu_supported(const gpu::Capabilities& caps, const WeightMatrix& gate_up, uint32_t n_tokens) {
    return gate_up.segments.size() == 1 && gate_up.rows % 2 == 0 && n_tokens >= 1 && n_tokens <= matvec_max_tokens &&
           matvec_config(caps, gate_up.type, gate_up.cols, n_tokens).rows_per_team % 2 == 0;
}

bool glu_input_pays(const gpu::Capabilities& caps, const WeightMatrix& weights) {
    // GPUs: every row team would recompute all the activations, an exp and a divide per two weights,
    // which binds the projection to the special-function units (issue 35); a pass costs one dispatch.
    if (caps.type != VK_PHYSICAL_DEVICE_TYPE_CPU) return false;
    // lavapipe: a dispatch costs ~55 us (../shared/docs/lavapipe.md), an activation step of one
    // subgroup roughly 10 ns, and each workgroup takes cols / threads_per_row steps (the 1B llama's
    // ffn_down: 64 x 8192, about 2.6 ms on 2 cores, where stories260K's is 2 x 172).
    constexpr uint64_t steps_per_dispatch = 8192;
    const MatvecConfig config = matvec_config(caps, weights.type, weights.cols);
    const uint64_t rows_per_group = config.workgroup_size / config.threads_per_row * config.rows_per_team;
    const uint64_t groups = (weights.rows + rows_per_group - 1) / rows_per_group;
    return groups * (weights.cols / config.threads_per_row) <= steps_per_dispatch;
}

std::string matvec_pipeline_name(gguf::GgmlType type, const MatvecConfig& config) {
    return weight_pipeline_name("matvec", type, config.float16, config.texel_reads);
}

std::vector<graph::Dispatch> matvec(gpu::Device& device, const WeightMatrix& weights, const graph::Region& x,
                                    const graph::Region& y, bool accumulate, std::optional<MatvecConfig> config) {
    return matvec(device, weights, MatvecInput::plain(x), y, accumulate, config);
}

namespace {

using Kind = MatvecInput::Kind;

bool is_glu(Kind kind) { return kind == Kind::SwiGlu || kind == Kind::GeGlu || kind == Kind::SwiGluOai; }

Kind glu_kind(Glu activation) { return MatvecInput::glu(activation, {}).kind; }

// output: Plain, or the GLU of a [gate | up] matrix's two halves (matvec_glu).
std::vector<graph::Dispatch> matvec_tokens(gpu::Device& device, const WeightMatrix& weights, const MatvecInput& input,
                                           const graph::Region& y, uint32_t n_tokens, bool accumulate,
                                           std::optional<MatvecConfig> config, Kind output = Kind::Plain) {
    const gpu::Capabilities& caps = device.caps();
    const std::vector<WeightSegment> segments = weight_segments(weights, "matvec");
    if (n_tokens == 0 || n_tokens > matvec_max_tokens || (n_tokens > 1 && input.kind != Kind::Plain))
        fail("matvec: {} vectors at once (1 to {}, formed inputs for 1 only)", n_tokens, matvec_max_tokens);
    const bool glu_output = output != Kind::Plain;
    if (glu_output && (is_glu(input.kind) || accumulate || weights.rows % 2 != 0 || segments.size() != 1))
        fail("matvec: a GLU output takes a plain or RMSNorm input, no accumulation, and a [gate | up] matrix of "
             "an even row count in one buffer ({} rows in {} segments)", weights.rows, segments.size());
    const uint64_t x_bytes = uint64_t(n_tokens) * weights.cols * 4 * (is_glu(input.kind) ? 2 : 1);
    const uint64_t y_bytes = uint64_t(n_tokens) * weights.rows * 4 / (glu_output ? 2 : 1);
    if (input.x.size < x_bytes || y.size < y_bytes)
        fail("matvec: {} x {} weights need x of {} bytes and y of {} bytes, got {} and {}", weights.rows,
             weights.cols, x_bytes, y_bytes, input.x.size, y.size);
    if (input.kind == Kind::RmsNorm && (!input.norm_weight || input.norm_weight->size < uint64_t(weights.cols) * 4))
        fail("matvec: an RMSNorm input of {} columns needs a norm weight of {} bytes", weights.cols,
             uint64_t(weights.cols) * 4);
    MatvecConfig launch = config ? *config : matvec_config(caps, weights.type, weights.cols, n_tokens);
    check_matvec_config(launch, caps, weights.type);
    launch = fit_row_length(launch, caps, weights.type, weights.cols);
    if (glu_output && launch.rows_per_team % 2 != 0)
        fail("matvec: a GLU output needs an even number of rows per team, not {}", launch.rows_per_team);

    std::vector<gpu::SpecConstant> spec = {{0, launch.workgroup_size}, {3, launch.threads_per_row},
                                           {4, launch.rows_per_team}, {5, uint32_t(input.kind)},
                                           {6, uint32_t(output)}, {7, n_tokens}};
    // The slice kernels read F16 and BF16 rows in 16-byte loads where every row starts so aligned
    // (ALIGNED_ROWS in shaders/dequant_common.glsl; segments start at least 64-byte aligned).
    const bool half_rows = weights.type == gguf::GgmlType::F16 || weights.type == gguf::GgmlType::BF16;
    if (!launch.texel_reads && half_rows && weight_row_bytes(weights.type, weights.cols) % 16 == 0)
        spec.push_back({8, 1});
    const gpu::Pipeline& pipeline = device.pipelines().get(matvec_pipeline_name(weights.type, launch), {spec});
    // Outputs per workgroup: a GLU output's team owns half its rows' outputs.
    const uint32_t rows_per_group =
        launch.workgroup_size / launch.threads_per_row * launch.rows_per_team / (glu_output ? 2 : 1);
    std::vector<graph::Dispatch> dispatches;
    for (const WeightSegment& segment : segments) {
        graph::Dispatch& dispatch = dispatches.emplace_back();
        dispatch.pipeline = &pipeline;
        // Binding 3 is read only for an RMSNorm input; the others bind x there again.
        dispatch.bindings = {{segment.region, gpu::Access::Read},
                             {input.x, gpu::Access::Read},
                             {y, accumulate ? gpu::Access::ReadWrite : gpu::Access::Write},
                             {input.norm_weight.value_or(input.x), gpu::Access::Read}};
        dispatch.params(params::MatvecParams{.cols = weights.cols, .rows = weights.rows,
                                             .row_count = segment.row_count, .row_offset = segment.row_offset,
                                             .accumulate = accumulate, .eps = input.eps});
        const uint32_t outputs = glu_output ? segment.row_count / 2 : segment.row_count;
        dispatch.groups = group_grid((outputs + rows_per_group - 1) / rows_per_group, caps);
    }
    return dispatches;
}

}  // namespace

std::vector<graph::Dispatch> matvec(gpu::Device& device, const WeightMatrix& weights, const MatvecInput& input,
                                    const graph::Region& y, bool accumulate, std::optional<MatvecConfig> config) {
    return matvec_tokens(device, weights, input, y, 1, accumulate, config);
}

std::vector<graph::Dispatch> matvec_glu(gpu::Device& device, const WeightMatrix& gate_up, Glu activation,
                                        const MatvecInput& input, const graph::Region& y, uint32_t n_tokens,
                                        std::optional<MatvecConfig> config) {
    return matvec_tokens(device, gate_up, input, y, n_tokens, false, config, glu_kind(activation));
}

std::vector<graph::Dispatch> matvec_batch(gpu::Device& device, const WeightMatrix& weights, const graph::Region& x,
                                          const graph::Region& y, uint32_t n_tokens, bool accumulate,
                                          std::optional<MatvecConfig> config) {
    return matvec_tokens(device, weights, MatvecInput::plain(x), y, n_tokens, accumulate, config);
}

}  // namespace vkllm::ops
