#pragma once
// What a Session hands an architecture to build one forward pass over: the step inputs the host
// writes before every run, the KV cache, and where the logits go.
#include <cstdint>
#include <vector>

#include "graph/graph.h"
#include "ops/attention_config.h"

namespace vkllm::model {

struct StepInputs {
    graph::Region ids;        // int32 [n_tokens]: token ids
    graph::Region positions;  // int32 [n_tokens]: their positions (key cell j holds position j)
    graph::Region slots;      // int32 [n_tokens]: the KV-cache cell each token writes; -1: none
};

struct KvCacheRegions {
    std::vector<graph::Region> k, v;  // per layer
    uint32_t n_cells = 0;
    ops::KvType type = ops::KvType::F16;
};

struct ForwardShape {
    uint32_t n_tokens = 1;
    bool all_logits = false;  // logits of every token, else of the last one only
};

}  // namespace vkllm::model
