#include "model/session.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <unistd.h>

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

uint64_t memory_budget(const gpu::Capabilities& caps) {
    if (caps.type == VK_PHYSICAL_DEVICE_TYPE_CPU) return uint64_t(sysconf(_SC_PHYS_PAGES)) * uint64_t(sysconf(_SC_PAGE_SIZE));
    uint64_t total = 0;
    for (const auto& heap : caps.heaps)
        if (heap.device_local) total += heap.size;
    return total;
}

Session::Session(gpu::Device& device, const Model& model, SessionOptions options)
    : device_(device), model_(model), n_vocab_(model.info().n_vocab), kv_type_(options.kv_type) {
    n_ctx_ = options.n_ctx ? options.n_ctx : default_n_ctx(model.info());
    if (n_ctx_ == 0) fail("the context size must be positive");
    if (options.n_ubatch == 0) fail("the micro-batch size must be positive");
    gpu::Allocator& allocator = device.allocator();
    // Chunks are powers of two; rows of logits for a whole chunk must fit one binding.
    n_ubatch_ = std::bit_floor(options.n_ubatch);
    uint64_t row_bytes = uint64_t(n_vocab_) * sizeof(float);
    n_logit_rows_ = uint32_t(std::min<uint64_t>(n_ubatch_, std::bit_floor(allocator.max_binding_range() / row_bytes)));
    if (n_logit_rows_ == 0) fail("a row of {} logits exceeds the device's binding range", n_vocab_);
    ids_ = allocator.create(n_ubatch_ * sizeof(int32_t), gpu::MemoryDomain::DeviceMapped);
    positions_ = allocator.create(n_ubatch_ * sizeof(int32_t), gpu::MemoryDomain::DeviceMapped);
    logits_ = allocator.create(n_logit_rows_ * row_bytes, gpu::MemoryDomain::DeviceMapped);
    for (const KvLayerLayout& layer : model.kv_layout().layers) {
        const uint32_t n_cells = kv_layer_cells(layer, n_ctx_, n_ubatch_);
        auto cache = [&](uint64_t bytes) { return bytes ? allocator.create(bytes, gpu::MemoryDomain::Device) : gpu::Buffer(); };
        layers_.push_back({cache(ops::kv_cache_bytes(kv_type_, n_cells, layer.k_row)),
                           cache(ops::kv_cache_bytes(kv_type_, n_cells, layer.v_row)),
                           cache(uint64_t(n_cells) * layer.extra_row * sizeof(float)), n_cells, layer.window});
        if (!slots_.contains(n_cells))
            slots_.emplace(n_cells, allocator.create(n_ubatch_ * sizeof(int32_t), gpu::MemoryDomain::DeviceMapped));
    }
}

Session::~Session() = default;

uint64_t Session::kv_bytes() const {
    uint64_t total = 0;
    for (const LayerCache& layer : layers_) total += layer.k.size() + layer.v.size() + layer.extra.size();
    return total;
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

graph::BakedGraph& Session::graph_for(uint32_t n_tokens, bool all_logits, bool embeddings) {
    auto& baked = graphs_[{n_tokens, all_logits, embeddings}];
    if (baked) return *baked;
    graph::Graph g(device_);
    const uint64_t inputs = n_tokens * sizeof(int32_t);
    StepInputs step{g.persistent("inp_tokens", ids_.range().sub(0, inputs)),
                    g.persistent("inp_pos", positions_.range().sub(0, inputs))};
    if (embeddings)
        step.embeddings = g.persistent("inp_embd_in", embeddings_.range().sub(0, uint64_t(n_tokens) * model_.info().n_embd * sizeof(float)));
    std::map<uint32_t, graph::Region> slots;
    for (const auto& [n_cells, buffer] : slots_)
        slots[n_cells] = g.persistent(fmt::format("inp_slots_{}", n_cells), buffer.range().sub(0, inputs));
    KvCacheRegions kv{.type = kv_type_};
    for (size_t il = 0; il < layers_.size(); ++il) {
        const LayerCache& layer = layers_[il];
        auto region = [&](const char* what, const gpu::Buffer& buffer) {
            return buffer.empty() ? graph::Region{} : g.persistent(fmt::format("cache_{}_l{}", what, il), buffer.range());
        };
        kv.layers.push_back({region("k", layer.k), region("v", layer.v), region("extra", layer.extra),
                             slots.at(layer.n_cells), layer.n_cells, layer.n_cells < n_ctx_});
    }
    uint32_t rows = all_logits ? n_tokens : 1;
    auto logits = g.persistent("result_output", logits_.range().sub(0, uint64_t(rows) * n_vocab_ * sizeof(float)));
    model_.build_forward(g, step, kv, logits, {n_tokens, all_logits});
    baked = std::make_unique<graph::BakedGraph>(std::move(g).bake());
    return *baked;
}

std::span<const float> Session::run_chunk(std::span<const int32_t> tokens, bool all_logits, bool embeddings) {
    const uint32_t n = uint32_t(tokens.size());
    const uint32_t bucket = n == 1 ? 1 : std::bit_ceil(n);
    const uint32_t padding = bucket - n;
    // Padding rows go first, so the last row is always the last token; they write no cache cell.
    std::vector<int32_t> ids(bucket, tokens[0]), positions(bucket, int32_t(n_past_));
    for (uint32_t t = 0; t < n; ++t) {
        ids[padding + t] = tokens[t];
        positions[padding + t] = int32_t(n_past_ + t);
    }
    ids_.write(0, std::as_bytes(std::span(ids)));
    positions_.write(0, std::as_bytes(std::span(positions)));
    for (const auto& [n_cells, buffer] : slots_) {
        std::vector<int32_t> slots(bucket, -1);
        for (uint32_t t = 0; t < n; ++t) slots[padding + t] = int32_t((n_past_ + t) % n_cells);
        buffer.write(0, std::as_bytes(std::span(slots)));
    }
    graph_for(bucket, all_logits, embeddings).replay();
    n_past_ += n;
    const float* rows = reinterpret_cast<const float*>(logits_.range().mapped);
    return all_logits ? std::span(rows + uint64_t(padding) * n_vocab_, uint64_t(n) * n_vocab_)
                      : std::span(rows, n_vocab_);
}

std::span<const float> Session::eval(std::span<const int32_t> tokens, std::vector<float>* all_logits) {
    if (tokens.empty()) fail("nothing to evaluate: no tokens");
    if (uint64_t(n_past_) + tokens.size() > n_ctx_)
        fail("{} more tokens do not fit the context: {} of its {} tokens are used (raise it with -c)", tokens.size(),
             n_past_, n_ctx_);
    for (int32_t id : tokens)
        if (id < 0 || uint32_t(id) >= n_vocab_) fail("token id {} is outside the vocabulary of {}", id, n_vocab_);
    history_.resize(n_past_, -1);
    history_.insert(history_.end(), tokens.begin(), tokens.end());
    const uint32_t chunk = all_logits ? n_logit_rows_ : n_ubatch_;
    std::span<const float> logits;
    for (size_t done = 0; done < tokens.size(); done += chunk) {
        logits = run_chunk(tokens.subspan(done, std::min<size_t>(chunk, tokens.size() - done)), all_logits != nullptr);
        if (all_logits) all_logits->insert(all_logits->end(), logits.begin(), logits.end());
    }
    return all_logits ? logits.last(n_vocab_) : logits;
}

void Session::eval_embeddings(std::span<const float> embeddings) {
    const uint64_t n_embd = model_.info().n_embd;
    const uint64_t rows = n_embd ? embeddings.size() / n_embd : 0;
    if (rows == 0 || rows * n_embd != embeddings.size())
        fail("{} embedding values are not whole rows of the model's {}", embeddings.size(), n_embd);
    if (n_past_ + rows > n_ctx_)
        fail("{} more positions do not fit the context: {} of its {} tokens are used (raise it with -c)", rows, n_past_,
             n_ctx_);
    if (embeddings_.empty())
        embeddings_ = device_.allocator().create(n_ubatch_ * n_embd * sizeof(float), gpu::MemoryDomain::DeviceMapped);
    for (uint64_t done = 0; done < rows; done += n_ubatch_) {
        const uint32_t n = uint32_t(std::min<uint64_t>(n_ubatch_, rows - done));
        const uint32_t bucket = n == 1 ? 1 : std::bit_ceil(n);
        // Rows in the chunk's last n slots, as run_chunk places tokens after its padding.
        std::vector<float> chunk(uint64_t(bucket) * n_embd, 0.0f);
        std::copy_n(embeddings.begin() + int64_t(done * n_embd), n * n_embd, chunk.begin() + int64_t((bucket - n) * n_embd));
        embeddings_.write(0, std::as_bytes(std::span(chunk)));
        const std::vector<int32_t> ids(n, 0);  // unread: the embeddings replace the lookup
        run_chunk(ids, false, /*embeddings=*/true);
    }
}

bool Session::window_keys_lost(uint32_t n) const {
    for (const LayerCache& layer : layers_) {
        if (layer.n_cells >= n_ctx_ || n == 0) continue;
        // The oldest key the token at n reads sits in the cell a later position took if one was written.
        const uint64_t oldest = n >= layer.window ? n - layer.window + 1 : 0;
        if (oldest + layer.n_cells < written_end_) return true;
    }
    return false;
}

void Session::truncate(uint32_t n) {
    if (n > n_past_) fail("cannot truncate {} tokens to {}", n_past_, n);
    written_end_ = std::max(written_end_, n_past_);
    history_.resize(n_past_, -1);
    history_.resize(n);
    n_past_ = n;
    if (!window_keys_lost(n)) return;
    if (std::ranges::find(history_, -1) != history_.end())
        fail("cannot keep {} tokens: a sliding window must be recomputed over positions that were not tokens", n);
    const std::vector<int32_t> kept = std::move(history_);
    history_.clear();
    n_past_ = written_end_ = 0;
    eval(kept);
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
    if (n_past_ == 0 || n < n_past_ || n > n_ctx_)
        fail("cannot fill the cache to {} tokens from {} (a prompt first, at most the context of {})", n, n_past_, n_ctx_);
    const KvLayout layout = model_.kv_layout();
    gpu::Commands commands(device_);
    for (size_t il = 0; il < layers_.size(); ++il) {
        const LayerCache& layer = layers_[il];
        const uint32_t written = std::min(n_past_, layer.n_cells), target = std::min(n, layer.n_cells);
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
    history_.resize(n, -1);
    n_past_ = n;
    written_end_ = std::max(written_end_, n);
}

}  // namespace vkllm::model
