#include "ops/moe_route.h"

#include "core/error.h"
#include "gpu/capabilities.h"
#include "gpu/device.h"
#include "params.h"

namespace vkllm::ops {

namespace {

constexpr uint32_t route_workgroup_size = 64;
constexpr uint32_t group_workgroup_size = 64;
constexpr uint32_t combine_workgroup_size = 64;

}  // namespace

void check_moe_routing(const MoeRouting& r, const char* what) {
    if (r.n_expert == 0 || r.n_expert > moe_max_experts)
        fail("{}: {} experts (vkllm routes 1 to {})", what, r.n_expert, moe_max_experts);
    if (r.n_expert_used == 0 || r.n_expert_used > r.n_expert || r.n_expert_used > moe_max_experts_used)
        fail("{}: {} experts used of {} (1 to {} and at most the experts)", what, r.n_expert_used, r.n_expert,
             moe_max_experts_used);
    if (r.scoring != MoeScoring::Softmax && r.scoring != MoeScoring::Sigmoid)
        fail("{}: expert gating function {} (vkllm has softmax 1 and sigmoid 2)", what, uint32_t(r.scoring));
    if (r.n_group > 1) {
        if (r.n_expert % r.n_group != 0 || r.n_expert / r.n_group < 2)
            fail("{}: {} experts do not split into {} groups of two or more", what, r.n_expert, r.n_group);
        if (r.n_group_used == 0 || r.n_group_used > r.n_group)
            fail("{}: {} expert groups used of {}", what, r.n_group_used, r.n_group);
        if (uint64_t(r.n_group_used) * (r.n_expert / r.n_group) < r.n_expert_used)
            fail("{}: {} groups of {} experts cannot hold the {} experts used", what, r.n_group_used,
                 r.n_expert / r.n_group, r.n_expert_used);
    }
}

graph::Dispatch moe_route(gpu::Device& device, const MoeRouting& routing, const graph::Region& logits,
                          const graph::Region& bias, const graph::Region& ids, const graph::Region& weights,
                          uint32_t n_tokens) {
    check_moe_routing(routing, "moe_route");
    const uint64_t out_bytes = uint64_t(n_tokens) * routing.n_expert_used * 4;
    const bool has_bias = bias.size != 0;
    if (n_tokens == 0 || logits.size < uint64_t(n_tokens) * routing.n_expert * 4 || ids.size < out_bytes ||
        weights.size < out_bytes || (has_bias && bias.size < uint64_t(routing.n_expert) * 4))
        fail("moe_route: buffers too small for {} tokens, {} experts, {} used", n_tokens, routing.n_expert,
             routing.n_expert_used);
    if (n_tokens > device.caps().max_workgroup_count[0])
        fail("moe_route: {} tokens exceed the device's dispatch limit", n_tokens);
    graph::Dispatch dispatch;
    dispatch.pipeline = &device.pipelines().get("moe_route", {{0, route_workgroup_size}});
    // Without a bias the logits stand in for the binding; the kernel does not read it.
    dispatch.bindings = {{logits, gpu::Access::Read},
                         {has_bias ? bias : logits, gpu::Access::Read},
                         {ids, gpu::Access::Write},
                         {weights, gpu::Access::Write}};
    const bool scaled = routing.routed_scale != 0.0f && routing.routed_scale != 1.0f;
    dispatch.params(params::MoeRouteParams{.n_expert = routing.n_expert,
                                           .n_expert_used = routing.n_expert_used,
                                           .n_tokens = n_tokens,
                                           .scoring = uint32_t(routing.scoring),
                                           .has_bias = has_bias,
                                           .norm_topk = routing.norm_topk,
                                           .routed_scale = scaled ? routing.routed_scale : 1.0f,
                                           .n_group = routing.n_group > 1 ? routing.n_group : 1,
                                           .n_group_used = routing.n_group_used});
    dispatch.groups = {n_tokens, 1, 1};
    return dispatch;
}

uint64_t moe_group_entries_bytes(uint32_t n_expert, uint32_t n_tokens) { return uint64_t(n_expert) * n_tokens * 4; }

graph::Dispatch moe_group(gpu::Device& device, const graph::Region& ids, const graph::Region& counts,
                          const graph::Region& entries, uint32_t n_expert, uint32_t n_expert_used, uint32_t n_tokens) {
    if (n_expert == 0 || n_expert_used == 0 || n_tokens == 0 || ids.size < uint64_t(n_tokens) * n_expert_used * 4 ||
        counts.size < uint64_t(n_expert) * 4 || entries.size < moe_group_entries_bytes(n_expert, n_tokens))
        fail("moe_group: buffers too small for {} tokens, {} experts, {} used", n_tokens, n_expert, n_expert_used);
    graph::Dispatch dispatch;
    dispatch.pipeline = &device.pipelines().get("moe_group", {{0, group_workgroup_size}});
    dispatch.bindings = {{ids, gpu::Access::Read}, {counts, gpu::Access::Write}, {entries, gpu::Access::Write}};
    dispatch.params(params::MoeGroupParams{.n_expert = n_expert, .n_expert_used = n_expert_used, .n_tokens = n_tokens});
    dispatch.groups = {n_expert, 1, 1};
    return dispatch;
}

graph::Dispatch moe_combine(gpu::Device& device, const graph::Region& y, const graph::Region& weights,
                            const graph::Region& shared, const graph::Region& x, uint32_t n, uint32_t n_expert_used,
                            uint32_t n_tokens) {
    const uint64_t rows = uint64_t(n_tokens) * n;
    const bool has_shared = shared.size != 0;
    if (n == 0 || n_expert_used == 0 || n_tokens == 0 || y.size < rows * n_expert_used * 4 ||
        weights.size < uint64_t(n_tokens) * n_expert_used * 4 || x.size < rows * 4 ||
        (has_shared && shared.size < rows * 4))
        fail("moe_combine: buffers too small for {} tokens of {} values, {} experts used", n_tokens, n, n_expert_used);
    if (n_tokens > device.caps().max_workgroup_count[1])
        fail("moe_combine: {} tokens exceed the device's dispatch limit", n_tokens);
    graph::Dispatch dispatch;
    dispatch.pipeline = &device.pipelines().get("moe_combine", {{0, combine_workgroup_size}});
    // Without a shared expert the weights stand in for its binding; the kernel does not read it.
    dispatch.bindings = {{y, gpu::Access::Read},
                         {weights, gpu::Access::Read},
                         {has_shared ? shared : weights, gpu::Access::Read},
                         {x, gpu::Access::ReadWrite}};
    dispatch.params(params::MoeCombineParams{
        .n = n, .n_expert_used = n_expert_used, .n_tokens = n_tokens, .has_shared = has_shared});
    dispatch.groups = {(n + combine_workgroup_size - 1) / combine_workgroup_size, n_tokens, 1};
    return dispatch;
}

}  // namespace vkllm::ops
