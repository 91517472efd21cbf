#pragma once
// A loaded model: one architecture's hyperparameters and weights on the GPU, and the passes of its
// forward pass. load_model picks the architecture by general.architecture.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gguf/reader.h"
#include "gpu/device.h"
#include "graph/graph.h"
#include "model/forward.h"
#include "model/weights.h"

namespace vkllm::model {

struct ModelInfo {
    std::string arch;
    std::string name;  // general.name, or the file name
    uint32_t n_vocab = 0, n_ctx_train = 0, n_embd = 0, n_layer = 0;
    uint64_t weight_bytes = 0;
    // An encoder (BERT): every token sees the whole input, so an input runs in one chunk from position 0;
    // learned positions end at n_ctx_train; no output head, only hidden states (Session::eval_hidden).
    bool encoder = false;
};

// What one layer keeps per token (cell) of its KV cache.
struct KvLayerLayout {
    uint32_t k_row = 0, v_row = 0;  // values per cell (n_head_kv * head_dim); v_row 0: no V cache (MLA reads V from K)
    uint32_t window = 0;            // sliding window W: a circular cache of W + n_ubatch - 1 cells; 0: full context
    uint32_t extra_row = 0;         // f32 values per cell of an extra per-layer cache (indexer keys); 0: none
};

struct KvLayout {
    std::vector<KvLayerLayout> layers;
};

class Model {
public:
    virtual ~Model() = default;
    virtual const ModelInfo& info() const = 0;
    virtual KvLayout kv_layout() const = 0;
    // Adds the passes of one run over shape.n_tokens tokens; logits: f32 [rows][n_vocab], or with
    // shape.hidden the hidden states after the final norm, f32 [n_tokens][n_embd].
    virtual void build_forward(graph::Graph& graph, const StepInputs& step, const KvCacheRegions& kv,
                               graph::Region logits, ForwardShape shape) const = 0;
};

struct LoadOptions {
    WeightLoader::Progress progress;
    WeightPlacement placement;  // its in_host_memory may read what before_upload decided
    // Called once the hyperparameters are read, before any weight is uploaded: a caller can check
    // that weights and KV cache fit and throw if they do not.
    std::function<void(const ModelInfo& info, const KvLayout& layout)> before_upload;
};

// Throws vkllm::Error for an unknown architecture, a missing or misshapen tensor, or a weight type
// vkllm does not run.
std::unique_ptr<Model> load_model(gpu::Device& device, const gguf::File& file, const LoadOptions& options = {});

// Bytes the weights take on the GPU (all tensors of the file).
uint64_t weight_bytes(const gguf::File& file);

// The KV cache the file's architecture keeps, from its metadata alone (no tensor is read, so a
// metadata-only GGUF serves), for the architectures that can say (`vkllm info`); nullopt otherwise.
std::optional<KvLayout> kv_layout_from_metadata(const gguf::File& file);

}  // namespace vkllm::model
