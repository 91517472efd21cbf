#pragma once
// What a Session hands an architecture to build one forward pass over: the step inputs the host
// writes before every run, the KV cache, and where the logits go.
#include <cstdint>
#include <optional>
#include <vector>

#include "graph/graph.h"
#include "ops/attention_config.h"

namespace vkllm::model {

struct StepInputs {
    graph::Region ids;        // int32 [n_tokens]: token ids
    graph::Region positions;  // int32 [n_tokens]: their positions, ascending; the last is the batch's last
    // f32 [n_tokens][n_embd] that replace the token embedding lookup (an image's embeddings), or none.
    std::optional<graph::Region> embeddings;
    // A step over several sequences, one token each (Session::decode): token t is sequence t's, at its
    // own position, and attends to that sequence's cells alone (KvLayerRegions::sequence_stride).
    // False: the tokens are one sequence's.
    bool rows_are_sequences = false;
};

// One sequence's cells of one layer (sub-regions of KvLayerRegions' k, v and extra).
struct KvSequenceRegions {
    graph::Region k, v, extra;
};

// One layer's cache. A full cache's cell j holds position j; a circular (window) cache's cell j holds
// the latest position p written so far with p = j (mod n_cells). Every sequence has n_cells cells of
// its own in k, v and extra, which writes address through the slots.
struct KvLayerRegions {
    graph::Region k, v;     // [n_cells_all] rows of the layout's k_row / v_row; v: none when v_row is 0
    graph::Region extra;    // f32 [n_cells_all][extra_row]; none when extra_row is 0
    graph::Region slots;    // int32 [n_tokens]: the cell each token writes (its sequence's first cell +
                            // position mod n_cells); -1: none
    uint32_t n_cells = 0;   // of one sequence
    uint32_t n_cells_all = 0;  // of k, v and extra: every sequence's, and padding that aligns them
    bool circular = false;  // n_cells < the context: cells are reused (model::KvLayerLayout::window)
    // The cells attention reads: in a graph of one sequence's tokens its cells (sub-ranges of k, v and
    // extra); with StepInputs::rows_are_sequences all of k, v and extra, token t reading the n_cells
    // cells from cell t * sequence_stride.
    KvSequenceRegions cells;
    uint32_t sequence_stride = 0;
};

struct KvCacheRegions {
    std::vector<KvLayerRegions> layers;
    ops::KvType type = ops::KvType::F16;
};

struct ForwardShape {
    uint32_t n_tokens = 1;
    bool all_logits = false;  // logits of every token, else of the last one only
    bool hidden = false;      // in place of logits, every token's hidden state after the final norm (embeddings)
};

}  // namespace vkllm::model
