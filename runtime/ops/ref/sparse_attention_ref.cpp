#include "ops/ref/sparse_attention_ref.h"

#include <algorithm>
#include <cmath>

namespace vkllm::ref {

std::vector<float> msa_block_scores(std::span<const float> index_q, std::span<const float> key_cache,
                                    std::span<const int32_t> positions, const ops::MsaConfig& config,
                                    uint32_t n_cells) {
    const uint32_t n_blocks = ops::msa_blocks(config, n_cells), dim = config.index_dim;
    std::vector<float> scores;
    for (size_t t = 0; t < positions.size(); ++t) {
        const int64_t pos = positions[t], own_block = pos / config.block_size;
        for (uint32_t g = 0; g < config.n_index_head; ++g) {
            const float* q = &index_q[(t * config.n_index_head + g) * dim];
            for (uint32_t b = 0; b < n_blocks; ++b) {
                const int64_t first = int64_t(b) * config.block_size;
                const int64_t last = std::min({pos, first + config.block_size - 1, int64_t(n_cells) - 1});
                double best = -INFINITY;
                for (int64_t j = first; j <= last; ++j) {
                    double dot = 0.0;
                    for (uint32_t d = 0; d < dim; ++d) dot += double(q[d]) * key_cache[j * dim + d];
                    best = std::max(best, dot);
                }
                const bool local = int64_t(b) <= own_block && int64_t(b) > own_block - config.local_blocks;
                scores.push_back(local ? float(best) + 1e30f : float(best));
            }
        }
    }
    return scores;
}

TopK msa_select(std::span<const float> scores, const ops::MsaConfig& config, uint32_t n_cells) {
    return top_k(scores, ops::msa_blocks(config, n_cells), ops::msa_selected(config, n_cells));
}

void msa_attention(std::span<const float> q, std::span<const float> k, std::span<const float> v,
                   std::span<const int32_t> positions, const ops::AttentionConfig& config,
                   const ops::MsaConfig& msa, const TopK& selection, uint32_t n_cells, std::span<float> out) {
    const uint32_t hd_k = config.head_dim_k, hd_v = config.head_dim_v, group = config.n_head / config.n_head_kv;
    const uint32_t selected = ops::msa_selected(msa, n_cells);
    std::vector<int64_t> cells;
    std::vector<double> logits, acc(hd_v);
    for (size_t t = 0; t < positions.size(); ++t) {
        for (uint32_t kv_head = 0; kv_head < config.n_head_kv; ++kv_head) {
            cells.clear();
            const size_t row = (t * config.n_head_kv + kv_head) * selected;
            for (uint32_t s = 0; s < selected; ++s) {
                if (selection.values[row + s] == -INFINITY) continue;
                const int64_t first = int64_t(selection.indices[row + s]) * msa.block_size;
                const int64_t last = std::min({int64_t(positions[t]), first + msa.block_size - 1, int64_t(n_cells) - 1});
                for (int64_t j = first; j <= last; ++j) cells.push_back(j);
            }
            for (uint32_t h = kv_head * group; h < (kv_head + 1) * group; ++h) {
                const float* qh = &q[(t * config.n_head + h) * hd_k];
                logits.clear();
                for (int64_t j : cells) {
                    double s = 0.0;
                    for (uint32_t d = 0; d < hd_k; ++d) s += double(qh[d]) * k[(j * config.n_head_kv + kv_head) * hd_k + d];
                    logits.push_back(s * config.scale);
                }
                const double max = logits.empty() ? 0.0 : *std::max_element(logits.begin(), logits.end());
                double sum = 0.0;
                std::fill(acc.begin(), acc.end(), 0.0);
                for (size_t i = 0; i < cells.size(); ++i) {
                    const double p = std::exp(logits[i] - max);
                    sum += p;
                    for (uint32_t d = 0; d < hd_v; ++d) acc[d] += p * v[(cells[i] * config.n_head_kv + kv_head) * hd_v + d];
                }
                for (uint32_t d = 0; d < hd_v; ++d) out[(t * config.n_head + h) * hd_v + d] = sum > 0 ? float(acc[d] / sum) : 0.0f;
            }
        }
    }
}

}  // namespace vkllm::ref
