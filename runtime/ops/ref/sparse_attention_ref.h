#pragma once
// Reference MiniMax sparse attention (model-notes.md C.6): the indexer's block scores, the top-k
// selection and the attention over the selected blocks, written the obvious way, in double.
// The cache is a single sequence: cell j holds position j.
#include <cstdint>
#include <span>
#include <vector>

#include "ops/attention_config.h"
#include "ops/ref/softmax_ref.h"
#include "ops/sparse_attention.h"

namespace vkllm::ref {

// Scores [n_tokens][n_index_head][n_blocks]: block b's max over its cells j <= positions[t] of
// index_q[t][g] . key_cache[j] (index_q [n_tokens][n_index_head][index_dim], key_cache
// [n_cells][index_dim]); -inf for a block past the token; + 1e30 for its local blocks.
std::vector<float> msa_block_scores(std::span<const float> index_q, std::span<const float> key_cache,
                                    std::span<const int32_t> positions, const ops::MsaConfig& config,
                                    uint32_t n_cells);

// The top min(top_k, n_blocks) blocks of each (token, index head) row of the scores: larger score
// first, equal scores by lower block (ref::top_k).
TopK msa_select(std::span<const float> scores, const ops::MsaConfig& config, uint32_t n_cells);

// Attention of q [n_tokens][n_head][head_dim_k] over the cells of each group's selected blocks
// (selection rows [n_tokens][n_head_kv], slots scored -inf skipped) up to the token's position;
// k, v: dequantized caches [n_cells][n_head_kv][head_dim_*]; out [n_tokens][n_head][head_dim_v].
void msa_attention(std::span<const float> q, std::span<const float> k, std::span<const float> v,
                   std::span<const int32_t> positions, const ops::AttentionConfig& config,
                   const ops::MsaConfig& msa, const TopK& selection, uint32_t n_cells, std::span<float> out);

}  // namespace vkllm::ref
