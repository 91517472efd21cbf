#pragma once
// The memory a model takes at a context, planned from its file before any weight is uploaded:
// weights, the KV cache, compute buffers (the transients of the largest prompt chunk and the rows of
// logits), against what the device has. Weights that do not fit in device-local memory go to host
// memory the device reads (MemoryDomain::Host), in this order, each step a whole unit:
//   1. token_embd: a token reads one row of it (all of it only when the output head is tied to it);
//   2. the feed-forward weights of each layer, the last layer first, then its attention weights:
//      every byte of those is read once per token wherever it lives, so they cost the same per byte;
//      the largest units (a layer's FFN) move the most bytes for the fewest buffers;
//   3. the output head.
// Norms and other 1-D tensors always stay: they are small and read by every pass.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/reader.h"
#include "gpu/capabilities.h"
#include "model/model.h"
#include "ops/attention_config.h"

namespace vkllm::model {

// What the device has for a model.
struct MemoryBudget {
    std::string device;         // its name (and the profile that clamped it), for messages
    uint64_t device_local = 0;  // caps.memory_budget: device-local heaps (lowered by VKLLM_DEVICE_LOCAL_LIMIT)
    uint64_t host = 0;          // the host's RAM
    bool unified = false;       // device-local memory is host memory (integrated GPUs, lavapipe)
    uint64_t binding_range = 0; // the largest buffer one binding reaches (a layer's KV cache is bound whole)

    static MemoryBudget of(const gpu::Capabilities& caps, uint64_t binding_range);
};

struct MemoryRequest {
    // 0: the largest up to the model's own context (at most 4096) that fits beside device-local
    // weights, unless that is under min(it, 512): then weights go to host memory for that much.
    // A context given is planned with weights moved to host memory as needed.
    uint32_t n_ctx = 0;
    uint32_t n_seq = 1;
    uint32_t n_ubatch = 512;
    ops::KvType kv_type = ops::KvType::F16;
};

struct MemoryPlan {
    uint32_t n_ctx = 0;
    uint64_t weights = 0, weights_host = 0;  // weights_host of them in host memory
    std::vector<std::string> host_tensors;   // the file's tensors placed there
    std::string host_units;                  // what they are, for a message: "token_embd, FFN of layers 27-31"
    uint64_t kv = 0;
    uint64_t compute = 0;  // transients of the largest prompt chunk and the session's rows of logits
    MemoryBudget budget;

    uint64_t weights_device() const { return weights - weights_host; }
    uint64_t device_local() const { return weights_device() + kv + compute; }
    uint64_t total() const { return weights + kv + compute; }
    bool in_host_memory(std::string_view tensor) const;

    // The plan as lines of text, for `vkllm info --memory` and --verbose.
    std::string describe() const;
};

// Bytes of compute buffers at a context (see MemoryPlan::compute), from the file's dimensions.
uint64_t compute_bytes(const gguf::File& file, const MemoryRequest& request, uint32_t n_ctx);

// The plan at request.n_ctx, or at the largest context that fits when it is 0. Throws with the
// figures when nothing fits, or when the asked-for context does not (naming the largest that does).
MemoryPlan plan_memory(const gguf::File& file, const KvLayout& layout, const MemoryRequest& request,
                       const MemoryBudget& budget);

}  // namespace vkllm::model
