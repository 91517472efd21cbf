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
};

// One layer's cache. A full cache's cell j holds position j; a circular (window) cache's cell j holds
// the latest position p written so far with p = j (mod n_cells).
struct KvLayerRegions {
    graph::Region k, v;     // [n_cells] rows of the layout's k_row / v_row; v: none when v_row is 0
    graph::Region extra;    // f32 [n_cells][extra_row]; none when extra_row is 0
    graph::Region slots;    // int32 [n_tokens]: the cell each token writes (position mod n_cells); -1: none
    uint32_t n_cells = 0;
    bool circular = false;  // n_cells < the context: cells are reused (model::KvLayerLayout::window)
};

struct KvCacheRegions {
    std::vector<KvLayerRegions> layers;
    ops::KvType type = ops::KvType::F16;
};

struct ForwardShape {
    uint32_t n_tokens = 1;
    bool all_logits = false;  // logits of every token, else of the last one only
};

}  // namespace vkllm::model
