#include "model/session.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include <fmt/format.h>

#include "core/error.h"
#include "gpu/dispatch.h"

namespace vkllm::model {

uint32_t kv_layer_cells(const KvLayerLayout& layer, uint32_t n_ctx, uint32_t n_ubatch) {
    if (layer.window == 0) return n_ctx;
    return uint32_t(std::min<uint64_t>(n_ctx, uint64_t(layer.window) + std::bit_floor(n_ubatch) - 1));
}

uint64_t kv_layer_bytes(const KvLayerLayout& layer, uint32_t n_ctx, uint32_t n_ubatch, ops::KvType type) {
    const uint32_t n_cells = kv_layer_cells(layer, n_ctx, n_ubatch);
    return ops::kv_cache_bytes(type, n_cells, layer.k_row) + ops::kv_cache_bytes(type, n_cells, layer.v_row) +
           uint64_t(n_cells) * layer.extra_row * sizeof(float);
}

uint64_t kv_cache_bytes(const KvLayout& layout, uint32_t n_ctx, uint32_t n_ubatch, ops::KvType type) {
    uint64_t total = 0;
    for (const KvLayerLayout& layer : layout.layers) total += kv_layer_bytes(layer, n_ctx, n_ubatch, type);
    return total;
}

std::vector<KvLayerKind> kv_cache_kinds(const KvLayout& layout, uint32_t n_ctx, uint32_t n_ubatch, ops::KvType type) {
    std::map<uint32_t, KvLayerKind> kinds;
    for (const KvLayerLayout& layer : layout.layers) {
        KvLayerKind& kind = kinds[layer.window];
        kind.window = layer.window;
        kind.n_layers += 1;
        kind.n_cells = kv_layer_cells(layer, n_ctx, n_ubatch);
        kind.bytes += kv_layer_bytes(layer, n_ctx, n_ubatch, type);
    }
    std::vector<KvLayerKind> list;
    for (const auto& [window, kind] : kinds) list.push_back(kind);
    return list;
}

namespace {

// Bytes of one cell in each array of a layer's caches: K, V (f16 rows) and the extra f32 rows.
std::vector<uint64_t> cell_records(const KvLayerLayout& layer) {
    std::vector<uint64_t> records;
    for (uint64_t record : {uint64_t(layer.k_row) * 2, uint64_t(layer.v_row) * 2, uint64_t(layer.extra_row) * sizeof(float)})
        if (record) records.push_back(record);
    return records;
}

// Rows of the graph a chunk of n tokens runs in (padding first): powers of two, so a few baked graphs
// serve every chunk length.
uint32_t chunk_rows(uint32_t n) { return std::bit_ceil(n); }

}  // namespace

Session::Session(gpu::Device& device, const Model& model, SessionOptions options)
    : device_(device), model_(model), n_vocab_(model.info().n_vocab), kv_type_(options.kv_type) {
    n_ctx_ = options.n_ctx ? options.n_ctx : default_n_ctx(model.info());
    if (n_ctx_ == 0) fail("the context size must be positive");
    if (options.n_ubatch == 0) fail("the micro-batch size must be positive");
    if (options.n_seq == 0) fail("a session needs at least one sequence");
    if (options.n_seq > 1 && kv_type_ != ops::KvType::F16)
        fail("a q8_0 KV cache serves one sequence only (its scales follow all its cells' quants); use an f16 cache");
    const ModelInfo& info = model.info();
    if (info.encoder && n_ctx_ > info.n_ctx_train)
        fail("a context of {} tokens is longer than the {} positions {} learned; lower -c", n_ctx_, info.n_ctx_train,
             info.name);
    seqs_.resize(options.n_seq);
    gpu::Allocator& allocator = device.allocator();
    // Chunks are powers of two; rows of logits for a whole chunk (or decode step) must fit one binding.
    // An encoder's chunk is its whole context: its tokens see each other both ways.
    n_ubatch_ = info.encoder ? std::bit_ceil(n_ctx_) : std::bit_floor(options.n_ubatch);
    const uint32_t n_rows = std::max(n_ubatch_, options.n_seq);
    if (!info.encoder) {
        uint64_t row_bytes = uint64_t(n_vocab_) * sizeof(float);
        n_logit_rows_ = uint32_t(std::min<uint64_t>(n_rows, std::bit_floor(allocator.max_binding_range() / row_bytes)));
        if (n_logit_rows_ == 0) fail("a row of {} logits exceeds the device's binding range", n_vocab_);
        if (n_logit_rows_ < options.n_seq)
            fail("{} sequences' rows of {} logits exceed the device's binding range", options.n_seq, n_vocab_);
        logits_ = allocator.create(n_logit_rows_ * row_bytes, gpu::MemoryDomain::DeviceMapped);
    } else {
        hidden_ = allocator.create(uint64_t(n_ubatch_) * info.n_embd * sizeof(float), gpu::MemoryDomain::DeviceMapped);
    }
    ids_ = allocator.create(n_rows * sizeof(int32_t), gpu::MemoryDomain::DeviceMapped);
    positions_ = allocator.create(n_rows * sizeof(int32_t), gpu::MemoryDomain::DeviceMapped);
    const gpu::Capabilities& caps = device.caps();
    const uint64_t alignment = std::max<uint64_t>({caps.min_storage_buffer_offset_alignment,
                                                   caps.min_texel_buffer_offset_alignment, 16});
    const std::vector<KvLayerLayout>& layout = model.kv_layout().layers;
    for (const KvLayerLayout& layer : layout) {
        const uint32_t n_cells = kv_layer_cells(layer, n_ctx_, n_ubatch_);
        CellBlocks& blocks = blocks_[n_cells];
        if (blocks.stride == 0) {
            blocks.stride = n_cells;
            blocks.slots = allocator.create(n_rows * sizeof(int32_t), gpu::MemoryDomain::DeviceMapped);
        }
        // A block of every layer of this cell count starts where each of its arrays may be bound.
        if (options.n_seq > 1)
            for (uint64_t record : cell_records(layer))
                while (blocks.stride * record % alignment != 0) ++blocks.stride;
    }
    gpu::Commands zero(device);
    for (const KvLayerLayout& layer : layout) {
        const uint32_t n_cells = kv_layer_cells(layer, n_ctx_, n_ubatch_);
        const uint32_t all_cells = blocks_.at(n_cells).stride * options.n_seq;
        auto cache = [&](uint64_t bytes) {
            if (bytes == 0) return gpu::Buffer();
            gpu::Buffer buffer = allocator.create(bytes, gpu::MemoryDomain::Device);
            // Padding rows of a decode step read cells no token wrote: zeros, never NaN.
            if (options.n_seq > 1)
                for (const gpu::BufferRange& segment : buffer.segments()) zero.fill(segment, 0);
            return buffer;
        };
        layers_.push_back({cache(ops::kv_cache_bytes(kv_type_, all_cells, layer.k_row)),
                           cache(ops::kv_cache_bytes(kv_type_, all_cells, layer.v_row)),
                           cache(uint64_t(all_cells) * layer.extra_row * sizeof(float)), n_cells, layer.window});
    }
    zero.submit_and_wait();
}

Session::~Session() = default;

const Session::Sequence& Session::sequence(uint32_t seq) const {
    if (seq >= seqs_.size()) fail("sequence {} does not exist: the session has {}", seq, seqs_.size());
    return seqs_[seq];
}

uint64_t Session::cells_in_use() const {
    uint64_t total = 0;
    for (const Sequence& seq : seqs_) total += seq.n_past;
    return total;
}

uint64_t Session::kv_bytes() const {
    uint64_t total = 0;
    for (const LayerCache& layer : layers_) total += layer.k.size() + layer.v.size() + layer.extra.size();
    return total;
}

std::vector<graph::PassTime> Session::profile_prompt_chunk(uint32_t n) {
    if (n < 2 || n > n_ubatch_) fail("a prompt chunk of {} tokens: chunks hold 2 to {}", n, n_ubatch_);
    // run_chunk's key for such a chunk without all logits; graph_for bakes it if none ran yet.
    return graph_for({chunk_rows(n), false, false, 0, false}).profile();
}

void Session::prepare() {
    if (!model_.info().encoder) graph_for({1, false, false, 0, false});
}

uint64_t Session::graphs_recorded() const {
    uint64_t total = 0;
    for (const auto& [key, baked] : graphs_) total += baked->stats().recordings;
    return total;
}

uint64_t Session::replays() const {
    uint64_t total = 0;
    for (const auto& [key, baked] : graphs_) total += baked->stats().replays;
    return total;
}

graph::BakedGraph& Session::graph_for(const GraphKey& key) {
    auto& baked = graphs_[key];
    if (baked) return *baked;
    const auto [n_tokens, all_logits, embeddings, seq, hidden] = key;
    graph::Graph g(device_);
    build_graph(g, n_tokens, all_logits, embeddings, seq, hidden);
    baked = std::make_unique<graph::BakedGraph>(std::move(g).bake({.shared_arenas = &arenas_}));
    return *baked;
}

void Session::build_graph(graph::Graph& g, uint32_t n_tokens, bool all_logits, bool embeddings, uint32_t seq,
                          bool hidden) const {
    if (!hidden) check_logits();
    const uint64_t inputs = n_tokens * sizeof(int32_t);
    StepInputs step{g.persistent("inp_tokens", ids_.range().sub(0, inputs)),
                    g.persistent("inp_pos", positions_.range().sub(0, inputs))};
    if (embeddings)
        step.embeddings = g.persistent("inp_embd_in", embeddings_.range().sub(0, uint64_t(n_tokens) * model_.info().n_embd * sizeof(float)));
    // Attention reads seq's cells for all the tokens, or row r sequence r's.
    step.rows_are_sequences = seq == decode_rows;
    std::map<uint32_t, graph::Region> slots;
    for (const auto& [n_cells, blocks] : blocks_)
        slots[n_cells] = g.persistent(fmt::format("inp_slots_{}", n_cells), blocks.slots.range().sub(0, inputs));
    KvCacheRegions kv{.type = kv_type_};
    const KvLayout layout = model_.kv_layout();
    for (size_t il = 0; il < layers_.size(); ++il) {
        const LayerCache& layer = layers_[il];
        const uint32_t stride = blocks_.at(layer.n_cells).stride;
        auto region = [&](const char* what, const gpu::Buffer& buffer) {
            return buffer.empty() ? graph::Region{} : g.persistent(fmt::format("cache_{}_l{}", what, il), buffer.range());
        };
        KvLayerRegions& regions = kv.layers.emplace_back(KvLayerRegions{
            region("k", layer.k), region("v", layer.v), region("extra", layer.extra), slots.at(layer.n_cells),
            layer.n_cells, stride * n_seq(), layer.n_cells < n_ctx_});
        regions.sequence_stride = stride;
        // A sequence's block of each array; a q8_0 cache holds one sequence, its quants then scales.
        auto block = [&](graph::Region whole, uint64_t record) {
            if (whole.resource == UINT32_MAX || n_seq() == 1 || step.rows_are_sequences) return whole;
            return whole.sub(uint64_t(seq) * stride * record, uint64_t(layer.n_cells) * record);
        };
        const KvLayerLayout& rows = layout.layers[il];
        regions.cells = {block(regions.k, uint64_t(rows.k_row) * 2), block(regions.v, uint64_t(rows.v_row) * 2),
                         block(regions.extra, uint64_t(rows.extra_row) * sizeof(float))};
    }
    if (hidden) {
        const uint64_t bytes = uint64_t(n_tokens) * model_.info().n_embd * sizeof(float);
        return model_.build_forward(g, step, kv, g.persistent("result_embd", hidden_.range().sub(0, bytes)),
                                    {n_tokens, true, true});
    }
    uint32_t rows = all_logits ? n_tokens : 1;
    auto logits = g.persistent("result_output", logits_.range().sub(0, uint64_t(rows) * n_vocab_ * sizeof(float)));
    model_.build_forward(g, step, kv, logits, {n_tokens, all_logits});
}

std::span<const float> Session::run_chunk(uint32_t seq, std::span<const int32_t> tokens, bool all_logits,
                                          bool embeddings, bool hidden) {
    Sequence& sequence = seqs_[seq];
    const uint32_t n = uint32_t(tokens.size()), n_past = sequence.n_past;
    const uint32_t bucket = chunk_rows(n);
    const uint32_t padding = bucket - n;
    // Padding rows go first, so the last row is always the last token; they write no cache cell.
    std::vector<int32_t> ids(bucket, tokens[0]), positions(bucket, int32_t(n_past));
    for (uint32_t t = 0; t < n; ++t) {
        ids[padding + t] = tokens[t];
        positions[padding + t] = int32_t(n_past + t);
    }
    ids_.write(0, std::as_bytes(std::span(ids)));
    positions_.write(0, std::as_bytes(std::span(positions)));
    for (const auto& [n_cells, blocks] : blocks_) {
        std::vector<int32_t> slots(bucket, -1);
        for (uint32_t t = 0; t < n; ++t) slots[padding + t] = int32_t(seq * blocks.stride + (n_past + t) % n_cells);
        blocks.slots.write(0, std::as_bytes(std::span(slots)));
    }
    graph_for({bucket, all_logits, embeddings, seq, hidden}).replay();
    sequence.n_past += n;
    if (hidden) {
        const uint64_t n_embd = model_.info().n_embd;
        return std::span(reinterpret_cast<const float*>(hidden_.range().mapped) + padding * n_embd, n * n_embd);
    }
    const float* rows = reinterpret_cast<const float*>(logits_.range().mapped);
    return all_logits ? std::span(rows + uint64_t(padding) * n_vocab_, uint64_t(n) * n_vocab_)
                      : std::span(rows, n_vocab_);
}

void Session::check_logits() const {
    if (model_.info().encoder)
        fail("{} is an encoder ({}): it has no logits to generate or score with, only embeddings (vkllm embed)",
             model_.info().name, model_.info().arch);
}

void Session::check_tokens(std::span<const int32_t> tokens) const {
    for (int32_t id : tokens)
        if (id < 0 || uint32_t(id) >= n_vocab_) fail("token id {} is outside the vocabulary of {}", id, n_vocab_);
}

std::span<const float> Session::eval(uint32_t seq, std::span<const int32_t> tokens, std::vector<float>* all_logits) {
    check_logits();
    const uint32_t n_past = sequence(seq).n_past;
    if (tokens.empty()) fail("nothing to evaluate: no tokens");
    if (uint64_t(n_past) + tokens.size() > n_ctx_)
        fail("{} more tokens do not fit the context: {} of its {} tokens are used (raise it with -c)", tokens.size(),
             n_past, n_ctx_);
    check_tokens(tokens);
    std::vector<int32_t>& history = seqs_[seq].history;
    history.insert(history.end(), tokens.begin(), tokens.end());
    const uint32_t chunk = all_logits ? std::min(n_logit_rows_, n_ubatch_) : n_ubatch_;
    std::span<const float> logits;
    for (size_t done = 0; done < tokens.size(); done += chunk) {
        logits = run_chunk(seq, tokens.subspan(done, std::min<size_t>(chunk, tokens.size() - done)), all_logits != nullptr);
        if (all_logits) all_logits->insert(all_logits->end(), logits.begin(), logits.end());
    }
    return all_logits ? logits.last(n_vocab_) : logits;
}

void Session::eval_hidden(uint32_t seq, std::span<const int32_t> tokens, std::vector<float>& hidden) {
    const uint32_t n_past = sequence(seq).n_past;
    if (tokens.empty()) fail("nothing to evaluate: no tokens");
    if (uint64_t(n_past) + tokens.size() > n_ctx_)
        fail("{} more tokens do not fit the context: {} of its {} tokens are used (raise it with -c)", tokens.size(),
             n_past, n_ctx_);
    if (model_.info().encoder && n_past > 0)
        fail("an encoder sees each input whole: its {} tokens must start the sequence, not follow {}", tokens.size(),
             n_past);
    check_tokens(tokens);
    const uint64_t n_embd = model_.info().n_embd;
    if (hidden_.empty())
        hidden_ = device_.allocator().create(uint64_t(n_ubatch_) * n_embd * sizeof(float), gpu::MemoryDomain::DeviceMapped);
    std::vector<int32_t>& history = seqs_[seq].history;
    history.insert(history.end(), tokens.begin(), tokens.end());
    for (size_t done = 0; done < tokens.size(); done += n_ubatch_) {
        const std::span<const float> rows =
            run_chunk(seq, tokens.subspan(done, std::min<size_t>(n_ubatch_, tokens.size() - done)), true, false, true);
        hidden.insert(hidden.end(), rows.begin(), rows.end());
    }
}

void Session::eval_embeddings(uint32_t seq, std::span<const float> embeddings) {
    const uint32_t n_past = sequence(seq).n_past;
    const uint64_t n_embd = model_.info().n_embd;
    const uint64_t rows = n_embd ? embeddings.size() / n_embd : 0;
    if (rows == 0 || rows * n_embd != embeddings.size())
        fail("{} embedding values are not whole rows of the model's {}", embeddings.size(), n_embd);
    if (n_past + rows > n_ctx_)
        fail("{} more positions do not fit the context: {} of its {} tokens are used (raise it with -c)", rows, n_past,
             n_ctx_);
    if (embeddings_.empty())
        embeddings_ = device_.allocator().create(n_ubatch_ * n_embd * sizeof(float), gpu::MemoryDomain::DeviceMapped);
    seqs_[seq].history.resize(n_past + rows, -1);
    for (uint64_t done = 0; done < rows; done += n_ubatch_) {
        const uint32_t n = uint32_t(std::min<uint64_t>(n_ubatch_, rows - done));
        const uint32_t bucket = chunk_rows(n);
        // Rows in the chunk's last n slots, as run_chunk places tokens after its padding.
        std::vector<float> chunk(uint64_t(bucket) * n_embd, 0.0f);
        std::copy_n(embeddings.begin() + int64_t(done * n_embd), n * n_embd, chunk.begin() + int64_t((bucket - n) * n_embd));
        embeddings_.write(0, std::as_bytes(std::span(chunk)));
        const std::vector<int32_t> ids(n, 0);  // unread: the embeddings replace the lookup
        run_chunk(seq, ids, false, /*embeddings=*/true);
    }
}

std::span<const float> Session::decode(std::span<const uint32_t> seqs, std::span<const int32_t> tokens) {
    check_logits();
    if (seqs.empty() || seqs.size() != tokens.size())
        fail("a decode step needs one token per sequence ({} sequences, {} tokens)", seqs.size(), tokens.size());
    check_tokens(tokens);
    std::vector<bool> listed(n_seq());
    uint32_t last = 0;
    for (uint32_t s : seqs) {
        if (sequence(s).n_past >= n_ctx_) fail("sequence {} has filled its context of {} tokens", s, n_ctx_);
        if (listed[s]) fail("sequence {} is listed twice in one decode step", s);
        listed[s] = true;
        last = std::max(last, s);
    }
    for (size_t i = 0; i < seqs.size(); ++i) seqs_[seqs[i]].history.push_back(tokens[i]);
    if (seqs.size() == 1) return run_chunk(seqs[0], tokens, false);

    // Row r is sequence r's token; the rows of sequences not listed are padding that writes no cell.
    const uint32_t bucket = std::min(std::bit_ceil(last + 1), n_seq());
    std::vector<int32_t> ids(bucket, tokens[0]), positions(bucket, 0);
    for (size_t i = 0; i < seqs.size(); ++i) {
        ids[seqs[i]] = tokens[i];
        positions[seqs[i]] = int32_t(seqs_[seqs[i]].n_past);
    }
    ids_.write(0, std::as_bytes(std::span(ids)));
    positions_.write(0, std::as_bytes(std::span(positions)));
    for (const auto& [n_cells, blocks] : blocks_) {
        std::vector<int32_t> slots(bucket, -1);
        for (uint32_t s : seqs) slots[s] = int32_t(s * blocks.stride + seqs_[s].n_past % n_cells);
        blocks.slots.write(0, std::as_bytes(std::span(slots)));
    }
    graph_for({bucket, true, false, decode_rows, false}).replay();
    for (uint32_t s : seqs) seqs_[s].n_past += 1;
    const float* rows = reinterpret_cast<const float*>(logits_.range().mapped);
    // Sequences listed as 0, 1, .. are the rows as they lie; others are gathered in the listed order.
    bool in_row_order = true;
    for (size_t i = 0; i < seqs.size(); ++i) in_row_order &= seqs[i] == i;
    if (in_row_order) return std::span(rows, seqs.size() * n_vocab_);
    decode_logits_.resize(seqs.size() * n_vocab_);
    for (size_t i = 0; i < seqs.size(); ++i)
        std::copy_n(rows + uint64_t(seqs[i]) * n_vocab_, n_vocab_, decode_logits_.begin() + int64_t(i * n_vocab_));
    return decode_logits_;
}

bool Session::window_keys_lost(const Sequence& seq, uint32_t n) const {
    for (const LayerCache& layer : layers_) {
        if (layer.n_cells >= n_ctx_ || n == 0) continue;
        // The oldest key the token at n reads sits in the cell a later position took if one was written.
        const uint64_t oldest = n >= layer.window ? n - layer.window + 1 : 0;
        if (oldest + layer.n_cells < seq.written_end) return true;
    }
    return false;
}

void Session::truncate(uint32_t seq, uint32_t n) {
    if (n > sequence(seq).n_past) fail("cannot truncate {} tokens to {}", sequence(seq).n_past, n);
    Sequence& kept = seqs_[seq];
    kept.written_end = n == 0 ? 0 : std::max(kept.written_end, kept.n_past);
    kept.history.resize(n);
    kept.n_past = n;
    if (!window_keys_lost(kept, n)) return;
    if (std::ranges::find(kept.history, -1) != kept.history.end())
        fail("cannot keep {} tokens: a sliding window must be recomputed over positions that were not tokens", n);
    const std::vector<int32_t> tokens = std::move(kept.history);
    kept.history.clear();
    kept.n_past = kept.written_end = 0;
    eval(seq, tokens);
}

namespace {

// A cache buffer as arrays of fixed-size per-cell records (layout: ops/attention_config.h): f16 or
// f32 rows, or q8_0 quants then scales. {offset, record bytes} of each.
std::vector<std::pair<uint64_t, uint64_t>> cell_arrays(ops::KvType type, uint32_t n_cells, uint32_t row) {
    if (type == ops::KvType::F16) return {{0, uint64_t(row) * 2}};
    return {{0, row}, {uint64_t(n_cells) * row, row / ops::kv_q8_block * 2}};
}

// dst[dst_offset ..] = src[src_offset ..] for `bytes`, through however the buffer is split.
void copy_within(gpu::Commands& commands, const gpu::Buffer& buffer, uint64_t src_offset, uint64_t dst_offset,
                 uint64_t bytes) {
    buffer.for_each_segment(src_offset, bytes, [&](const gpu::BufferRange& src, uint64_t src_within, uint64_t done,
                                                   uint64_t count) {
        buffer.for_each_segment(dst_offset + done, count, [&](const gpu::BufferRange& dst, uint64_t dst_within,
                                                              uint64_t part, uint64_t part_bytes) {
            commands.copy(src.sub(src_within + part, part_bytes), dst.sub(dst_within, part_bytes));
        });
    });
}

}  // namespace

void Session::fill_kv_repeating(uint32_t n) {
    Sequence& first = seqs_[0];
    if (first.n_past == 0 || n < first.n_past || n > n_ctx_)
        fail("cannot fill the cache to {} tokens from {} (a prompt first, at most the context of {})", n, first.n_past,
             n_ctx_);
    const KvLayout layout = model_.kv_layout();
    gpu::Commands commands(device_);
    for (size_t il = 0; il < layers_.size(); ++il) {
        const LayerCache& layer = layers_[il];
        const uint32_t written = std::min(first.n_past, layer.n_cells), target = std::min(n, layer.n_cells);
        auto repeat = [&](const gpu::Buffer& buffer, uint64_t offset, uint64_t record) {
            // Doubling: each copy reads cells the earlier ones wrote (Commands orders them).
            for (uint32_t filled = written; filled < target;) {
                const uint32_t count = std::min(filled, target - filled);
                copy_within(commands, buffer, offset, offset + uint64_t(filled) * record, uint64_t(count) * record);
                filled += count;
            }
        };
        const KvLayerLayout& rows = layout.layers[il];
        for (auto [offset, record] : cell_arrays(kv_type_, layer.n_cells, rows.k_row)) repeat(layer.k, offset, record);
        if (!layer.v.empty())
            for (auto [offset, record] : cell_arrays(kv_type_, layer.n_cells, rows.v_row)) repeat(layer.v, offset, record);
        if (!layer.extra.empty()) repeat(layer.extra, 0, uint64_t(rows.extra_row) * sizeof(float));
    }
    commands.submit_and_wait();
    first.history.resize(n, -1);
    first.n_past = n;
    first.written_end = std::max(first.written_end, n);
}

}  // namespace vkllm::model
