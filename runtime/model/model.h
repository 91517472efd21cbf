#pragma once
// A loaded model: one architecture's hyperparameters and weights on the GPU, and the passes of its
// forward pass. load_model picks the architecture by general.architecture.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

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
};

// Row sizes of each layer's K and V cache (n_head_kv * head_dim).
struct KvLayout {
    std::vector<uint32_t> k_row, v_row;
};

class Model {
public:
    virtual ~Model() = default;
    virtual const ModelInfo& info() const = 0;
    virtual KvLayout kv_layout() const = 0;
    // Adds the passes of one run over shape.n_tokens tokens; logits: f32 [rows][n_vocab].
    virtual void build_forward(graph::Graph& graph, const StepInputs& step, const KvCacheRegions& kv,
                               graph::Region logits, ForwardShape shape) const = 0;
};

struct LoadOptions {
    WeightLoader::Progress progress;
    // Called once the hyperparameters are read, before any weight is uploaded: a caller can check
    // that weights and KV cache fit and throw if they do not.
    std::function<void(const ModelInfo& info, const KvLayout& layout)> before_upload;
};

// Throws vkllm::Error for an unknown architecture, a missing or misshapen tensor, or a weight type
// vkllm does not run.
std::unique_ptr<Model> load_model(gpu::Device& device, const gguf::File& file, const LoadOptions& options = {});

// Bytes the weights take on the GPU (all tensors of the file).
uint64_t weight_bytes(const gguf::File& file);

}  // namespace vkllm::model
