#pragma once
// Mixture-of-experts routing on the GPU (shaders/moe_route.comp, moe_group.comp, moe_combine.comp),
// as llama.cpp's build_moe_ffn (model-notes.md C.0): scores from the router logits, selection with an
// optional bias and group limit, top-k (ties to the lower expert index), the selected experts'
// weights normalised and scaled; then, for a chunk, the tokens of each expert listed together; and
// the weighted sum of the experts' outputs added to the residual.
#include <cstdint>

#include "graph/graph.h"

namespace vkllm::ops {

enum class MoeScoring : uint32_t { Softmax = 1, Sigmoid = 2 };  // expert_gating_func values

constexpr uint32_t moe_max_experts = 512;       // MAX_EXPERTS in shaders/moe_route.comp
constexpr uint32_t moe_max_experts_used = 32;

struct MoeRouting {
    uint32_t n_expert = 0, n_expert_used = 0;
    MoeScoring scoring = MoeScoring::Softmax;
    bool norm_topk = false;    // expert_weights_norm: weights /= max(sum, 6.103515625e-5)
    float routed_scale = 0;    // expert_weights_scale; 0 or 1: none
    uint32_t n_group = 0;      // expert_group_count; 0 or 1: no group limit
    uint32_t n_group_used = 0; // expert_group_used_count: groups kept (by their two best scores)
};

// Throws vkllm::Error for counts the kernels cannot take (naming `what`, e.g. a tensor or layer).
void check_moe_routing(const MoeRouting& routing, const char* what);

// logits: f32 [n_tokens][n_expert]; bias: f32 [n_expert] or the empty Region{} for none;
// ids: uint32 [n_tokens][n_expert_used] (selection order, best first); weights: f32, same shape.
graph::Dispatch moe_route(gpu::Device& device, const MoeRouting& routing, const graph::Region& logits,
                          const graph::Region& bias, const graph::Region& ids, const graph::Region& weights,
                          uint32_t n_tokens);

// The (token, slot) entries of each expert for a chunk: counts uint32 [n_expert]; entries uint32
// [n_expert][n_tokens], entry = token * n_expert_used + slot, in token order. One workgroup per
// expert, so the lists do not depend on scheduling.
uint64_t moe_group_entries_bytes(uint32_t n_expert, uint32_t n_tokens);
graph::Dispatch moe_group(gpu::Device& device, const graph::Region& ids, const graph::Region& counts,
                          const graph::Region& entries, uint32_t n_expert, uint32_t n_expert_used, uint32_t n_tokens);

// x[t] += sum over slots s in order of weights[t][s] * y[t][s] (+ shared[t] when given, after the
// routed sum, as llama.cpp adds the shared expert); y: f32 [n_tokens][n_expert_used][n],
// shared: f32 [n_tokens][n] or the empty Region{}.
graph::Dispatch moe_combine(gpu::Device& device, const graph::Region& y, const graph::Region& weights,
                            const graph::Region& shared, const graph::Region& x, uint32_t n, uint32_t n_expert_used,
                            uint32_t n_tokens);

}  // namespace vkllm::ops
