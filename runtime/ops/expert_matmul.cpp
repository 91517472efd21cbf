#include "ops/expert_matmul.h"

#include <algorithm>

#include "core/error.h"
#include "gpu/capabilities.h"
#include "gpu/device.h"
#include "gpu/pipeline.h"
#include "params.h"

namespace vkllm::ops {

namespace {

// As in matmul.cpp: each 32-column unit costs an invocation about 14 loop iterations, and lavapipe
// stops loops past 65535, so a dispatch sums at most this many units and longer rows take several.
constexpr uint32_t max_units_per_dispatch = 768;

void check_select(const WeightMatrix& experts, const ExpertRows& select, const char* op) {
    if (select.n_expert == 0 || select.rows == 0 || select.row_begin + select.rows > select.expert_rows ||
        uint64_t(select.n_expert) * select.expert_rows != experts.rows)
        fail("{}: rows {}..{} of {} experts of {} rows do not fit a stack of {} rows", op, select.row_begin,
             select.row_begin + select.rows, select.n_expert, select.expert_rows, experts.rows);
}

}  // namespace

std::vector<graph::Dispatch> matvec_id(gpu::Device& device, const WeightMatrix& experts, const ExpertRows& select,
                                       const ExpertInput& input, const graph::Region& ids, const ExpertOutput& output,
                                       uint32_t n_slots, std::optional<MatvecConfig> config) {
    const gpu::Capabilities& caps = device.caps();
    check_select(experts, select, "matvec_id");
    const std::vector<WeightSegment> segments = weight_segments(experts, "matvec_id");
    if (input.glu && !input.per_slot) fail("matvec_id: a GLU input needs one [gate | up] per slot");
    const uint32_t x_stride = input.per_slot ? (input.glu ? 2 : 1) * experts.cols : 0;
    const uint64_t x_bytes = (x_stride ? uint64_t(n_slots) * x_stride : experts.cols) * 4;
    const uint32_t y_stride = output.stride ? output.stride : select.rows;
    const uint64_t y_bytes = (uint64_t(n_slots - 1) * y_stride + output.offset + select.rows) * 4;
    if (n_slots == 0 || n_slots > caps.max_workgroup_count[2] || output.offset + select.rows > y_stride ||
        input.x.size < x_bytes || ids.size < uint64_t(n_slots) * 4 || output.y.size < y_bytes)
        fail("matvec_id: {} slots of {} x {} experts need x of {} bytes, ids of {} and y of {}, got {}, {} and {}",
             n_slots, select.rows, experts.cols, x_bytes, n_slots * 4, y_bytes, input.x.size, ids.size,
             output.y.size);
    // matvec's launch shape, fitted to the row length (matvec() checks and fits a given config alike).
    const MatvecConfig default_launch = matvec_config(caps, experts.type, experts.cols);
    MatvecConfig launch = config.value_or(default_launch);
    const uint32_t subgroup = std::max({caps.max_subgroup_size, caps.subgroup_size, 1u});
    if (launch.threads_per_row == 0 || (launch.threads_per_row != 1 && launch.threads_per_row % subgroup != 0) ||
        launch.workgroup_size % launch.threads_per_row != 0 || launch.rows_per_team == 0 ||
        launch.rows_per_team > matvec_max_rows_per_team)
        fail(
            "matvec_id: {} threads per row, {} rows per team in a workgroup of {}: teams are 1 thread or whole "
            "subgroups of {}, 1 to {} rows",
            launch.threads_per_row, launch.rows_per_team, launch.workgroup_size, subgroup, matvec_max_rows_per_team);
    launch.threads_per_row = std::max(launch.threads_per_row, default_launch.threads_per_row);
    launch.workgroup_size =
        (launch.workgroup_size + launch.threads_per_row - 1) / launch.threads_per_row * launch.threads_per_row;
    if (launch.float16 && !(caps.use_float16() && has_f16_variant(experts.type)))
        fail("matvec_id: the fp16 variant for {} weights is not available on this device",
             gguf::type_name(experts.type));

    const gpu::Pipeline& pipeline =
        device.pipelines().get(weight_pipeline_name("matvec_id", experts.type, launch.float16, launch.texel_reads),
                               {{0, launch.workgroup_size},
                                {3, launch.threads_per_row},
                                {4, launch.rows_per_team},
                                {5, uint32_t(input.glu ? MatvecInput::glu(*input.glu, input.x).kind
                                                       : MatvecInput::Kind::Plain)}});
    const uint32_t rows_per_group = launch.workgroup_size / launch.threads_per_row * launch.rows_per_team;
    std::vector<graph::Dispatch> dispatches;
    for (const WeightSegment& segment : segments) {
        graph::Dispatch& dispatch = dispatches.emplace_back();
        dispatch.pipeline = &pipeline;
        dispatch.bindings = {{segment.region, gpu::Access::Read},
                             {input.x, gpu::Access::Read},
                             {ids, gpu::Access::Read},
                             {output.y, gpu::Access::Write}};
        dispatch.params(params::MatvecIdParams{.cols = experts.cols,
                                               .row_count = segment.row_count,
                                               .row_offset = segment.row_offset,
                                               .expert_rows = select.expert_rows,
                                               .row_begin = select.row_begin,
                                               .rows = select.rows,
                                               .x_stride = x_stride,
                                               .y_stride = y_stride,
                                               .y_offset = output.offset});
        dispatch.groups = group_grid((select.rows + rows_per_group - 1) / rows_per_group, caps);
        dispatch.groups[2] = n_slots;
    }
    return dispatches;
}

MatmulConfig matmul_id_config(const gpu::Capabilities& caps, gguf::GgmlType type, const ExpertRows& select,
                              uint32_t n_tokens, uint32_t n_slots, bool int8_activations) {
    MatmulConfig launch = matmul_config(caps, type, int8_activations);
    const uint64_t per_expert = (uint64_t(n_tokens) * n_slots + select.n_expert - 1) / std::max(select.n_expert, 1u);
    // The cooperative-matrix tile keeps a whole product per subgroup.
    const uint32_t fewest = launch.coopmat ? launch.subgroups_tokens * launch.coopmat->n : 8;
    while (launch.tile_tokens > fewest && launch.tile_tokens / 2 >= per_expert) launch.tile_tokens /= 2;
    return launch;
}

std::vector<graph::Dispatch> matmul_id(gpu::Device& device, const WeightMatrix& experts, const ExpertRows& select,
                                       const graph::Region& x, bool x_per_slot, const graph::Region& counts,
                                       const graph::Region& entries, const graph::Region& y, uint32_t n_tokens,
                                       uint32_t n_slots, std::optional<MatmulConfig> config) {
    const gpu::Capabilities& caps = device.caps();
    check_select(experts, select, "matmul_id");
    const std::vector<WeightSegment> segments = weight_segments(experts, "matmul_id");
    const MatmulConfig launch = config.value_or(matmul_id_config(caps, experts.type, select, n_tokens, n_slots));
    check_matmul_config(launch, caps, experts.type, "matmul_id");
    const uint64_t entries_total = uint64_t(n_tokens) * n_slots;
    const uint64_t x_rows = x_per_slot ? entries_total : n_tokens;
    const uint64_t x_bytes =
        launch.int8_activations ? int8_activation_bytes(x_rows, experts.cols) : x_rows * experts.cols * 4;
    const uint64_t y_bytes = entries_total * select.rows * 4;
    if (n_tokens == 0 || n_slots == 0 || x.size < x_bytes || y.size < y_bytes ||
        counts.size < uint64_t(select.n_expert) * 4 || entries.size < uint64_t(select.n_expert) * n_tokens * 4)
        fail(
            "matmul_id: {} tokens of {} slots over {} experts of {} x {} need x of {} bytes and y of {}, got {} and {}",
            n_tokens, n_slots, select.n_expert, select.rows, experts.cols, x_bytes, y_bytes, x.size, y.size);
    if (x_bytes / 4 > UINT32_MAX || y_bytes / 4 > UINT32_MAX)
        fail("matmul_id: {} tokens of {} slots exceed 2^32 elements", n_tokens, n_slots);

    const gpu::Pipeline& pipeline = matmul_pipeline(device, experts.type, launch, true);
    const uint32_t row_groups = (select.rows + launch.tile_rows - 1) / launch.tile_rows;
    const uint32_t token_groups = (n_tokens + launch.tile_tokens - 1) / launch.tile_tokens;
    if (row_groups > caps.max_workgroup_count[0] || token_groups > caps.max_workgroup_count[1] ||
        select.n_expert > caps.max_workgroup_count[2])
        fail("matmul_id: {} x {} x {} workgroups exceed the device's dispatch limits", row_groups, token_groups,
             select.n_expert);
    const uint32_t units = (experts.cols + weight_unit_elems - 1) / weight_unit_elems;
    std::vector<graph::Dispatch> dispatches;
    for (const WeightSegment& segment : segments) {
        // Only the experts with rows in this segment get workgroups.
        const uint32_t expert_begin = segment.row_offset / select.expert_rows;
        const uint32_t expert_end = (segment.row_offset + segment.row_count - 1) / select.expert_rows + 1;
        // Each piece of k after the first adds to what the previous ones wrote.
        for (uint32_t unit_begin = 0; unit_begin < units; unit_begin += max_units_per_dispatch) {
            const bool add = unit_begin > 0;
            graph::Dispatch& dispatch = dispatches.emplace_back();
            dispatch.pipeline = &pipeline;
            dispatch.bindings = {{segment.region, gpu::Access::Read},
                                 {x, gpu::Access::Read},
                                 {counts, gpu::Access::Read},
                                 {entries, gpu::Access::Read},
                                 {y, add ? gpu::Access::ReadWrite : gpu::Access::Write}};
            dispatch.params(params::MatmulIdParams{.cols = experts.cols,
                                                   .row_count = segment.row_count,
                                                   .row_offset = segment.row_offset,
                                                   .expert_rows = select.expert_rows,
                                                   .row_begin = select.row_begin,
                                                   .rows = select.rows,
                                                   .n_tokens = n_tokens,
                                                   .n_slots = n_slots,
                                                   .x_per_slot = x_per_slot,
                                                   .unit_begin = unit_begin,
                                                   .unit_end = std::min(units, unit_begin + max_units_per_dispatch),
                                                   .accumulate = add,
                                                   .expert_begin = expert_begin});
            dispatch.groups = {row_groups, token_groups, expert_end - expert_begin};
        }
    }
    return dispatches;
}

}  // namespace vkllm::ops
