#include "ops/ref/moe_ref.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "gguf/types.h"
#include "ops/ref/matmul_ref.h"

namespace vkllm::ref {

namespace {

// Larger first, ties to the lower index, NaN last.
bool ranks_before(const std::vector<float>& values, uint32_t a, uint32_t b) {
    const float va = values[a], vb = values[b];
    if (std::isnan(va) || std::isnan(vb)) return !std::isnan(va) && std::isnan(vb);
    return va > vb || (va == vb && a < b);
}

std::vector<float> expert_scores(std::span<const float> logits, ops::MoeScoring scoring) {
    std::vector<float> scores(logits.size());
    if (scoring == ops::MoeScoring::Sigmoid) {
        for (size_t i = 0; i < logits.size(); ++i) scores[i] = float(1.0 / (1.0 + std::exp(-double(logits[i]))));
        return scores;
    }
    const double max = *std::max_element(logits.begin(), logits.end());
    double sum = 0;
    for (float logit : logits) sum += std::exp(double(logit) - max);
    for (size_t i = 0; i < logits.size(); ++i) scores[i] = float(std::exp(double(logits[i]) - max) / sum);
    return scores;
}

// Sets the selection values of all but the n_group_used best groups (by the sum of their two best
// values) to -inf.
void limit_groups(std::vector<float>& selection, const ops::MoeRouting& r) {
    const uint32_t per_group = r.n_expert / r.n_group;
    std::vector<float> group_scores(r.n_group);
    for (uint32_t g = 0; g < r.n_group; ++g) {
        std::vector<float> values(selection.begin() + g * per_group, selection.begin() + (g + 1) * per_group);
        std::vector<uint32_t> order(per_group);
        std::iota(order.begin(), order.end(), 0u);
        std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return ranks_before(values, a, b); });
        group_scores[g] = values[order[0]] + values[order[1]];
    }
    std::vector<uint32_t> groups(r.n_group);
    std::iota(groups.begin(), groups.end(), 0u);
    std::sort(groups.begin(), groups.end(), [&](uint32_t a, uint32_t b) { return ranks_before(group_scores, a, b); });
    for (uint32_t rank = r.n_group_used; rank < r.n_group; ++rank)
        std::fill_n(selection.begin() + groups[rank] * per_group, per_group, -std::numeric_limits<float>::infinity());
}

}  // namespace

MoeSelection moe_route(std::span<const float> logits, std::span<const float> bias, const ops::MoeRouting& r,
                       uint32_t n_tokens) {
    MoeSelection out;
    for (uint32_t t = 0; t < n_tokens; ++t) {
        const std::vector<float> scores = expert_scores(logits.subspan(size_t(t) * r.n_expert, r.n_expert), r.scoring);
        std::vector<float> selection = scores;
        for (uint32_t e = 0; e < r.n_expert && !bias.empty(); ++e) selection[e] += bias[e];
        if (r.n_group > 1) limit_groups(selection, r);
        std::vector<uint32_t> order(r.n_expert);
        std::iota(order.begin(), order.end(), 0u);
        std::stable_sort(order.begin(), order.end(),
                         [&](uint32_t a, uint32_t b) { return ranks_before(selection, a, b); });
        double sum = 0;
        for (uint32_t s = 0; s < r.n_expert_used; ++s) sum += scores[order[s]];
        for (uint32_t s = 0; s < r.n_expert_used; ++s) {
            double weight = scores[order[s]];
            if (r.norm_topk) weight /= std::max(sum, 6.103515625e-5);
            if (r.routed_scale != 0 && r.routed_scale != 1) weight *= r.routed_scale;
            out.ids.push_back(order[s]);
            out.weights.push_back(float(weight));
        }
    }
    return out;
}

void expert_products(gguf::GgmlType type, std::span<const std::byte> experts, uint32_t expert_rows, uint32_t cols,
                     uint32_t row_begin, uint32_t rows, std::span<const uint32_t> ids, std::span<const float> x,
                     bool x_per_slot, std::span<float> y) {
    const uint64_t row_bytes = gguf::row_bytes(type, cols);
    for (size_t s = 0; s < ids.size(); ++s) {
        const auto weights =
            experts.subspan((uint64_t(ids[s]) * expert_rows + row_begin) * row_bytes, rows * row_bytes);
        matmul(type, weights, rows, cols, x.subspan(x_per_slot ? s * cols : 0, cols), 1, y.subspan(s * rows, rows));
    }
}

}  // namespace vkllm::ref
