#pragma once
// A conversation with a model: its KV cache, the step inputs, the logits, and the baked graphs.
// Prompts run in chunks of up to n_ubatch tokens, each padded up to a power of two (the padding
// goes first and writes no cache cell), so a handful of graphs serve every length; each generated
// token replays the one-token graph. Only the step inputs (ids, positions, slots) change.
#include <algorithm>
#include <iosfwd>
#include <map>
#include <memory>
#include <span>
#include <tuple>
#include <vector>

#include "graph/baked.h"
#include "model/model.h"

namespace vkllm::model {

struct SessionOptions {
    uint32_t n_ctx = 0;       // tokens the KV cache holds; 0: the model's training context, at most 4096
    uint32_t n_ubatch = 512;  // most tokens one prefill run takes
    ops::KvType kv_type = ops::KvType::F16;
};

// The context a session gets when none is asked for: the training context, at most 4096 tokens.
inline uint32_t default_n_ctx(const ModelInfo& info) { return std::min(info.n_ctx_train, 4096u); }

// Cells of one layer's cache in a session of n_ctx tokens run in chunks of at most n_ubatch: n_ctx,
// or for a sliding-window layer W + n_ubatch - 1, so that a chunk's keys never overwrite one its own
// earlier queries still read.
uint32_t kv_layer_cells(const KvLayerLayout& layer, uint32_t n_ctx, uint32_t n_ubatch);
// Bytes of one layer's caches (K, V and the extra cache) and of the whole KV cache.
uint64_t kv_layer_bytes(const KvLayerLayout& layer, uint32_t n_ctx, uint32_t n_ubatch, ops::KvType type);
uint64_t kv_cache_bytes(const KvLayout& layout, uint32_t n_ctx, uint32_t n_ubatch, ops::KvType type);

// The KV cache by kind of layer: full-context layers first, then sliding-window layers by window.
struct KvLayerKind {
    uint32_t window = 0;  // 0: full context
    uint32_t n_layers = 0, n_cells = 0;
    uint64_t bytes = 0;  // of all n_layers
};
std::vector<KvLayerKind> kv_cache_kinds(const KvLayout& layout, uint32_t n_ctx, uint32_t n_ubatch, ops::KvType type);
// Memory vkllm may plan to use on the device: its device-local heaps, or the host's RAM for a CPU
// device (lavapipe reports a heap far smaller than what it can allocate).
uint64_t memory_budget(const gpu::Capabilities& caps);

class Session {
public:
    Session(gpu::Device& device, const Model& model, SessionOptions options = {});
    ~Session();

    // Runs the tokens at positions n_past() onward and returns the logits after the last one
    // (n_vocab floats, valid until the next call). With all_logits, appends every token's logits.
    // Throws vkllm::Error, before running anything, when they would overrun the context.
    std::span<const float> eval(std::span<const int32_t> tokens, std::vector<float>* all_logits = nullptr);
    // Runs rows of input embeddings (f32 [rows][n_embd], an image's) at positions n_past() onward in
    // place of token embeddings; no logits.
    void eval_embeddings(std::span<const float> embeddings);

    // Bakes the one-token graph (creating its pipelines) now rather than on the first eval.
    void prepare() { graph_for(1, false); }

    uint32_t n_past() const { return n_past_; }
    uint32_t n_ctx() const { return n_ctx_; }
    uint32_t n_ubatch() const { return n_ubatch_; }
    // Keeps the first n tokens of the cache (multi-turn reuse); later tokens overwrite the rest. When a
    // sliding-window layer's circular cache no longer holds keys the next token reads, the kept tokens
    // run again (a window's keys depend on the earlier layers' back to the start).
    void truncate(uint32_t n);
    // Makes n the past by repeating the cells written so far (eval a prompt first) up to n, with copies
    // on the GPU: a context of n tokens for timing decode (vkllm bench --kv-fill) without prefilling
    // it. Attention and the indexer then read n cells of real activations, but no real sequence, so
    // the logits that follow are no model's answer to anything.
    void fill_kv_repeating(uint32_t n);

    uint64_t kv_bytes() const;
    // Stats of the one-token graph every decode step replays.
    const graph::GraphStats& decode_stats() { return graph_for(1, false).stats(); }
    void dump_decode_graph(std::ostream& out) { graph_for(1, false).dump(out); }
    // Runs the one-token graph once more on the last step's inputs, timing every pass.
    std::vector<graph::PassTime> profile_decode() { return graph_for(1, false).profile(); }
    // Graphs baked (recorded) so far, and replays of all of them.
    uint64_t graphs_recorded() const;
    uint64_t replays() const;

private:
    gpu::Device& device_;
    const Model& model_;
    uint32_t n_ctx_, n_past_ = 0, n_vocab_, n_ubatch_, n_logit_rows_;
    ops::KvType kv_type_;
    gpu::Buffer ids_, positions_, logits_;
    struct LayerCache {
        gpu::Buffer k, v, extra;  // v and extra: empty when the layout has none
        uint32_t n_cells = 0, window = 0;
    };
    std::vector<LayerCache> layers_;
    std::vector<int32_t> history_;  // the token at each position eval ran, -1 where none (for truncate)
    uint32_t written_end_ = 0;      // one past the highest position whose keys may sit in the cache

    // Whether a circular cache lost keys in the window of a token at position n (overwritten by later ones).
    bool window_keys_lost(uint32_t n) const;
    std::map<uint32_t, gpu::Buffer> slots_;  // int32 [n_ubatch] per distinct cell count: position mod n_cells
    gpu::Buffer embeddings_;  // f32 [n_ubatch][n_embd] for eval_embeddings, created on first use
    // By (tokens, all logits, embeddings in place of token ids).
    std::map<std::tuple<uint32_t, bool, bool>, std::unique_ptr<graph::BakedGraph>> graphs_;

    graph::BakedGraph& graph_for(uint32_t n_tokens, bool all_logits, bool embeddings = false);
    // Runs one chunk of at most n_ubatch tokens; returns the rows of logits it wrote.
    std::span<const float> run_chunk(std::span<const int32_t> tokens, bool all_logits, bool embeddings = false);
};

}  // namespace vkllm::model
