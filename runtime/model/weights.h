#pragma once
// Weights on the GPU, kept in their GGUF types. The loader checks each tensor's shape and type by
// name before uploading it, and fuses tensors multiplied by the same input (Q/K/V, gate/up) into
// one weight when they share a type, so one matvec reads them all.
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/reader.h"
#include "gpu/device.h"
#include "gpu/memory.h"
#include "gpu/transfer.h"
#include "ops/matvec.h"
#include "ops/rope_config.h"

namespace vkllm::model {

// A weight on the GPU: `rows` rows of `cols` values (ggml ne[0] = cols) in `type`'s blocks, split
// into bindable segments at row boundaries.
struct Weight {
    std::string name;
    gguf::GgmlType type = gguf::GgmlType::F32;
    uint32_t rows = 0, cols = 0;
    gpu::Buffer buffer;

    // The weight as a persistent resource of `graph`, named after it (declared once per graph).
    ops::WeightMatrix matrix(graph::Graph& graph) const {
        return ops::weight_matrix(graph, name, type, rows, cols, buffer);
    }
    // Small weights (norms) as one region.
    graph::Region region(graph::Graph& graph) const { return graph.persistent(name, buffer.range()); }
    uint64_t bytes() const { return buffer.size(); }
};

// Q/K/V or gate/up: one fused weight, or the parts when their types differ (a Q4_K_M file keeps
// attn_v in Q6_K); never requantized.
struct WeightGroup {
    std::vector<Weight> parts;  // one when fused
    uint64_t bytes() const;
};

// A model's ends: the token embedding, and the output head, which may be tied to the embedding.
struct EmbeddingWeights {
    Weight token_embd;             // {n_embd, n_vocab}
    Weight output_norm;            // {n_embd}
    std::optional<Weight> output;  // {n_embd, n_vocab}; absent: tied to token_embd
};

// Where the loader puts weights and how it holds them.
struct WeightPlacement {
    // Tensors that go to host memory the device reads (MemoryDomain::Host), for a model larger than
    // device-local memory (MemoryPlan::in_host_memory); none: all device-local. A fused weight goes
    // there when any of its tensors does.
    std::function<bool(std::string_view tensor)> in_host_memory;
    // --mlock: the weights the host can map (all of them where device memory is host memory) are
    // locked in RAM, never swapped out; loading fails when the system refuses (RLIMIT_MEMLOCK).
    bool lock = false;
};

// Each tensor's pages of the file are released once its bytes are uploaded (gguf::File::release):
// the weights are held once, in device memory, not also in the file's mapping.
class WeightLoader {
public:
    using Progress = std::function<void(uint64_t done, uint64_t total)>;
    WeightLoader(gpu::Device& device, const gguf::File& file, Progress progress = {}, WeightPlacement placement = {});

    bool has(std::string_view name) const { return file_.find_tensor(name) != nullptr; }
    // `shape` in ggml order (ne[0] first); a 1-D shape is a vector (one row).
    Weight load(std::string_view name, std::initializer_list<uint64_t> shape);
    std::optional<Weight> load_optional(std::string_view name, std::initializer_list<uint64_t> shape);
    // Tensors of equal cols whose outputs are concatenated: each {name, rows}.
    WeightGroup load_group(std::span<const std::pair<std::string, uint32_t>> members, uint32_t cols);
    EmbeddingWeights load_embeddings(uint32_t n_embd, uint32_t n_vocab);
    // The RoPE phase table of `rope` (ops::rope_phase_table), which the rope passes bind like a weight.
    gpu::Buffer rope_phases(const ops::RopeConfig& rope);
    // Uploads are complete after this.
    void finish();

    uint64_t bytes_loaded() const { return bytes_loaded_; }

private:
    gpu::Device& device_;
    const gguf::File& file_;
    gpu::Transfer transfer_;
    Progress progress_;
    WeightPlacement placement_;
    uint64_t bytes_total_ = 0, bytes_loaded_ = 0;

    void lock_pages(const gpu::BufferRange& segment);
    const gguf::Tensor& checked(std::string_view name, std::initializer_list<uint64_t> shape) const;
    Weight upload(std::string name, std::span<const gguf::Tensor* const> tensors);
};

}  // namespace vkllm::model
