#pragma once
// MiniMax sparse attention (model-notes.md C.6; shaders/msa_*.comp) over a single-sequence cache
// whose cell j holds position j, or one per token in a decode step over several sequences (seq_cells,
// as ops::AttentionShape has it). A light indexer picks, for every token and KV group, the top_k
// blocks of block_size cells; the group's query heads attend to those blocks only. All on the GPU:
// the selected blocks stay in a buffer the attention reads.
//   msa_key_write:  index keys into the layer's f32 index-key cache, at each token's slot;
//   msa_select:     block scores (max over a block of index query . index key, causal), the local
//                   blocks forced in, then the top_k blocks of each (token, group): ops::top_k's
//                   order, larger score first and equal scores by lower block;
//   msa_attention:  each group's query heads over their selected blocks, causally inside them.
#include <cstdint>
#include <vector>

#include "graph/graph.h"
#include "ops/attention.h"

namespace vkllm::ops {

struct MsaConfig {
    uint32_t n_index_head = 0;  // one index-query head per KV group (attention.indexer.head_count)
    uint32_t index_dim = 0;     // attention.indexer.key_length; a multiple of 4
    uint32_t block_size = 0;    // cells per block
    uint32_t top_k = 0;         // blocks attended per query and group (the forced ones included)
    uint32_t local_blocks = 0;  // blocks ending with the query's own that are always selected
};

// Blocks covering n_cells, and how many of them each (token, group) selects: min(top_k, blocks).
uint32_t msa_blocks(const MsaConfig& config, uint32_t n_cells);
uint32_t msa_selected(const MsaConfig& config, uint32_t n_cells);

// rows: f32 index keys [n_tokens] rows of src_stride floats (0: index_dim); slots: int32 [n_tokens]
// (outside the cache: skipped); cache: f32 [n_cells][index_dim].
graph::Dispatch msa_key_write(gpu::Device& device, const MsaConfig& config, uint32_t n_tokens, uint32_t src_stride,
                              uint32_t n_cells, const graph::Region& rows, const graph::Region& slots,
                              const graph::Region& cache);

struct MsaShape {
    uint32_t n_tokens = 0;
    uint32_t n_cells = 0;
    uint32_t q_stride = 0;  // floats between tokens' index queries, a multiple of 4 (0: n_index_head * index_dim)
    uint32_t seq_cells = 0;  // 0, or token t is its own sequence's, over the n_cells cells from cell t * seq_cells
};

// The selected blocks: f32 scores and uint32 block ids, [n_tokens][n_index_head][msa_selected];
// a score of -inf marks a slot with no visible block (fewer blocks than top_k).
struct MsaSelection {
    graph::Region scores, blocks;
};

uint64_t msa_select_scratch_bytes(const MsaConfig& config, const MsaShape& shape);
// index_q: f32 [n_tokens] rows of q_stride floats, each [n_index_head][index_dim]; key_cache as
// msa_key_write fills it; positions: int32 [n_tokens].
std::vector<graph::Dispatch> msa_select(gpu::Device& device, const MsaConfig& config, const MsaShape& shape,
                                        const graph::Region& index_q, const graph::Region& key_cache,
                                        const graph::Region& positions, const MsaSelection& selection,
                                        const graph::Region& scratch);

// q: f32 [n_tokens] rows of q_stride floats each starting with [n_head][head_dim_k] (AttentionShape);
// caches as kv_write fills them; out f32 [n_tokens][n_head][head_dim_v]. config.n_head_kv must equal
// msa.n_index_head; softcap and sliding window are not part of this attention.
struct MsaAttentionBuffers {
    graph::Region q, k_cache, v_cache, positions, out;
    MsaSelection selection;
};
graph::Dispatch msa_attention(gpu::Device& device, const AttentionConfig& config, const MsaConfig& msa,
                              const AttentionShape& shape, const MsaAttentionBuffers& buffers);

}  // namespace vkllm::ops
