#pragma once
// Reference mixture-of-experts routing and expert products (model-notes.md C.0 "MoE"), written the
// obvious way: per token, sort the experts; per selected expert, a plain matrix product.
#include <cstdint>
#include <span>
#include <vector>

#include "gguf/types.h"
#include "ops/moe_route.h"

namespace vkllm::ref {

struct MoeSelection {
    std::vector<uint32_t> ids;    // [n_tokens][n_expert_used], best first
    std::vector<float> weights;   // [n_tokens][n_expert_used]
};

// logits [n_tokens][n_expert]; bias [n_expert] or empty. Scores in double, rounded to f32 as the
// kernel stores them; selection ties go to the lower expert index.
MoeSelection moe_route(std::span<const float> logits, std::span<const float> bias, const ops::MoeRouting& routing,
                       uint32_t n_tokens);

// y[s] = W_{ids[s]} rows row_begin .. row_begin + rows - 1, times x[s] (x_per_slot) or x; experts is
// a stack of n_expert matrices of expert_rows rows of cols in `type`'s blocks; y [n_slots][rows].
void expert_products(gguf::GgmlType type, std::span<const std::byte> experts, uint32_t expert_rows, uint32_t cols,
                     uint32_t row_begin, uint32_t rows, std::span<const uint32_t> ids, std::span<const float> x,
                     bool x_per_slot, std::span<float> y);

}  // namespace vkllm::ref
