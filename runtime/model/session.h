#pragma once
// Conversations with a model: n_seq sequences sharing one KV cache, the step inputs, the logits, and
// the baked graphs. Only the step inputs (ids, positions, slots) change between replays.
//
// Cache layout: each layer keeps one buffer per cache (K, V, the extra index keys) holding n_seq
// blocks of `stride` cells, sequence s owning cells [s * stride, s * stride + n_cells): n_cells is
// the layer's per-sequence count (the context, or a sliding window's circular W + n_ubatch - 1), the
// stride n_cells rounded up so that each block starts at an offset a descriptor may bind (storage and
// texel alignment). A token's slot (the cell it writes) is its sequence's block start + position mod
// n_cells, so one write pass serves tokens of any sequences; a prompt's attention binds its
// sequence's block, and a decode step's reads row r's tokens over sequence r's block alone: no
// sequence ever reads another's. MLA keeps its latent rows and MiniMax-M3
// its index keys the same way, so its top-k blocks are chosen per sequence. A q8_0 cache keeps its
// scales after all the quants of a buffer, which a sequence's block cannot bind with its own cells, so
// q8_0 serves one sequence only.
//
// Graphs: a prompt of one sequence runs in chunks of up to n_ubatch tokens, each padded up to a power
// of two (the padding goes first and writes no cache cell), through graphs baked per (chunk size,
// sequence). decode() runs one token of each listed sequence through a graph baked per bucket B (the
// power of two past the highest listed sequence, at most n_seq): row r is sequence r's token, rows
// of unlisted sequences are padding (slot -1: they write no cell; their outputs are dropped).
// Projections take the B rows together (the weights read once for all); attention is one dispatch
// for all the rows, row r over sequence r's block. A single listed sequence replays that sequence's
// one-token graph, so list the lowest sequences to keep buckets small. All of a session's graphs
// share their transient memory (graph::SharedArenas): only one runs at a time.
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
    uint32_t n_ctx = 0;       // tokens the KV cache holds per sequence; 0: the model's training context, at most 4096
    uint32_t n_seq = 1;       // sequences
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

class Session {
public:
    Session(gpu::Device& device, const Model& model, SessionOptions options = {});
    ~Session();

    // Runs the tokens at positions n_past(seq) onward and returns the logits after the last one
    // (n_vocab floats, valid until the next call). With all_logits, appends every token's logits.
    // Throws vkllm::Error, before running anything, when they would overrun the context.
    std::span<const float> eval(uint32_t seq, std::span<const int32_t> tokens, std::vector<float>* all_logits = nullptr);
    std::span<const float> eval(std::span<const int32_t> tokens, std::vector<float>* all_logits = nullptr) {
        return eval(0, tokens, all_logits);
    }
    // Runs the tokens at positions n_past(seq) onward and appends each one's hidden state after the
    // final norm to `hidden` (f32 [tokens][n_embd]): what embeddings pool. An encoder's tokens see each
    // other both ways, so they must start the sequence (truncate it first) and fit one chunk.
    void eval_hidden(uint32_t seq, std::span<const int32_t> tokens, std::vector<float>& hidden);
    // Runs rows of input embeddings (f32 [rows][n_embd], an image's) at positions n_past(seq) onward in
    // place of token embeddings; no logits.
    void eval_embeddings(uint32_t seq, std::span<const float> embeddings);
    void eval_embeddings(std::span<const float> embeddings) { eval_embeddings(0, embeddings); }
    // One decode step: tokens[i] at position n_past(seqs[i]) for each of the distinct sequences listed,
    // through one replayed graph. Returns the logits [seqs.size()][n_vocab], valid until the next call.
    std::span<const float> decode(std::span<const uint32_t> seqs, std::span<const int32_t> tokens);

    // Bakes the one-token graph (creating its pipelines) now rather than on the first eval; an encoder
    // has none (its inputs are whole texts).
    void prepare();
    // Adds the passes of a run to g without baking it: n_tokens (1 or a power of two up to n_ubatch)
    // of sequence seq (or seq as decode() asks for its rows, one per sequence); hidden: the hidden
    // states in place of the logits. `vkllm shaders` creates every pipeline this way on devices that cannot run.
    void build_graph(graph::Graph& g, uint32_t n_tokens, bool all_logits, bool embeddings = false, uint32_t seq = 0,
                     bool hidden = false) const;

    uint32_t n_seq() const { return uint32_t(seqs_.size()); }
    uint32_t n_past(uint32_t seq) const { return sequence(seq).n_past; }
    uint32_t n_past() const { return n_past(0); }
    uint32_t n_ctx() const { return n_ctx_; }
    uint32_t n_ubatch() const { return n_ubatch_; }
    // The token at each position the sequence holds, -1 where an image embedding (or fill_kv_repeating) sat.
    std::span<const int32_t> history(uint32_t seq) const { return sequence(seq).history; }
    // Cells in use: the positions all sequences hold.
    uint64_t cells_in_use() const;
    // Keeps the first n tokens of the sequence (prefix reuse; 0 frees it); later tokens overwrite the
    // rest. When a sliding-window layer's circular cache no longer holds keys the next token reads, the
    // kept tokens run again (a window's keys depend on the earlier layers' back to the start).
    void truncate(uint32_t seq, uint32_t n);
    void truncate(uint32_t n) { truncate(0, n); }
    // Makes n the past of sequence 0 by repeating the cells written so far (eval a prompt first) up to
    // n, with copies on the GPU: a context of n tokens for timing decode (vkllm bench --kv-fill) without
    // prefilling it. Attention and the indexer then read n cells of real activations, but no real
    // sequence, so the logits that follow are no model's answer to anything.
    void fill_kv_repeating(uint32_t n);

    uint64_t kv_bytes() const;
    // Stats of the one-token graph every decode step of sequence 0 replays.
    const graph::GraphStats& decode_stats() { return graph_for({1, false, false, 0, false}).stats(); }
    void dump_decode_graph(std::ostream& out) { graph_for({1, false, false, 0, false}).dump(out); }
    // Runs the one-token graph once more on the last step's inputs, timing every pass.
    std::vector<graph::PassTime> profile_decode() { return graph_for({1, false, false, 0, false}).profile(); }
    // Runs the graph of a prompt chunk of n tokens (2 to n_ubatch) of sequence 0 once more on the last
    // inputs it ran with, timing every pass.
    std::vector<graph::PassTime> profile_prompt_chunk(uint32_t n);
    // Graphs baked (recorded) so far, and replays of all of them.
    uint64_t graphs_recorded() const;
    uint64_t replays() const;

private:
    gpu::Device& device_;
    const Model& model_;
    uint32_t n_ctx_, n_vocab_, n_ubatch_, n_logit_rows_;
    ops::KvType kv_type_;
    gpu::Buffer ids_, positions_, logits_;
    struct LayerCache {
        gpu::Buffer k, v, extra;  // v and extra: empty when the layout has none
        uint32_t n_cells = 0, window = 0;  // per sequence
    };
    std::vector<LayerCache> layers_;
    struct Sequence {
        uint32_t n_past = 0;
        std::vector<int32_t> history;  // the token at each position eval ran, -1 where none (for truncate)
        uint32_t written_end = 0;      // one past the highest position whose keys may sit in the cache
    };
    std::vector<Sequence> seqs_;
    const Sequence& sequence(uint32_t seq) const;

    // Whether a circular cache lost keys in the window of a token at position n of seq (overwritten by later ones).
    bool window_keys_lost(const Sequence& seq, uint32_t n) const;
    // Per distinct per-sequence cell count: the cells between sequences' blocks, and the int32 slot of
    // each token of a run (its sequence's block start + position mod n_cells).
    struct CellBlocks {
        uint32_t stride = 0;
        gpu::Buffer slots;
    };
    std::map<uint32_t, CellBlocks> blocks_;
    gpu::Buffer embeddings_;  // f32 [n_ubatch][n_embd] for eval_embeddings, created on first use
    gpu::Buffer hidden_;      // f32 [n_ubatch][n_embd] for eval_hidden: an encoder's output, else created on first use
    std::vector<float> decode_logits_;  // decode()'s rows in the order of its sequences
    graph::SharedArenas arenas_;

    // A graph: n_tokens of sequence `seq`, or with seq == decode_rows n_tokens rows of sequences 0 .. n_tokens - 1.
    static constexpr uint32_t decode_rows = UINT32_MAX;
    using GraphKey = std::tuple<uint32_t, bool, bool, uint32_t, bool>;  // (tokens, all logits, embeddings, seq, hidden)
    std::map<GraphKey, std::unique_ptr<graph::BakedGraph>> graphs_;

    graph::BakedGraph& graph_for(const GraphKey& key);
    // Runs one chunk of at most n_ubatch tokens of seq; returns the rows of logits (or hidden states) it wrote.
    std::span<const float> run_chunk(uint32_t seq, std::span<const int32_t> tokens, bool all_logits,
                                     bool embeddings = false, bool hidden = false);
    void check_tokens(std::span<const int32_t> tokens) const;
    void check_logits() const;  // refuses a run for logits on an encoder
};

}  // namespace vkllm::model
