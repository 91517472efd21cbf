#include "model/session.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <unistd.h>

#include "core/error.h"

namespace vkllm::model {

uint64_t kv_cache_bytes(const KvLayout& layout, uint32_t n_ctx, ops::KvType type) {
    uint64_t total = 0;
    for (size_t il = 0; il < layout.k_row.size(); ++il)
        total += ops::kv_cache_bytes(type, n_ctx, layout.k_row[il]) + ops::kv_cache_bytes(type, n_ctx, layout.v_row[il]);
    return total;
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
    slots_ = allocator.create(n_ubatch_ * sizeof(int32_t), gpu::MemoryDomain::DeviceMapped);
    logits_ = allocator.create(n_logit_rows_ * row_bytes, gpu::MemoryDomain::DeviceMapped);
    KvLayout layout = model.kv_layout();
    for (size_t il = 0; il < layout.k_row.size(); ++il) {
        k_cache_.push_back(allocator.create(ops::kv_cache_bytes(kv_type_, n_ctx_, layout.k_row[il]), gpu::MemoryDomain::Device));
        v_cache_.push_back(allocator.create(ops::kv_cache_bytes(kv_type_, n_ctx_, layout.v_row[il]), gpu::MemoryDomain::Device));
    }
}

Session::~Session() = default;

uint64_t Session::kv_bytes() const {
    uint64_t total = 0;
    for (size_t il = 0; il < k_cache_.size(); ++il) total += k_cache_[il].size() + v_cache_[il].size();
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

graph::BakedGraph& Session::graph_for(uint32_t n_tokens, bool all_logits) {
    auto& baked = graphs_[{n_tokens, all_logits}];
    if (baked) return *baked;
    graph::Graph g(device_);
    const uint64_t inputs = n_tokens * sizeof(int32_t);
    StepInputs step{g.persistent("inp_tokens", ids_.range().sub(0, inputs)),
                    g.persistent("inp_pos", positions_.range().sub(0, inputs)),
                    g.persistent("inp_slots", slots_.range().sub(0, inputs))};
    KvCacheRegions kv{{}, {}, n_ctx_, kv_type_};
    for (size_t il = 0; il < k_cache_.size(); ++il) {
        kv.k.push_back(g.persistent("cache_k_l" + std::to_string(il), k_cache_[il].range()));
        kv.v.push_back(g.persistent("cache_v_l" + std::to_string(il), v_cache_[il].range()));
    }
    uint32_t rows = all_logits ? n_tokens : 1;
    auto logits = g.persistent("result_output", logits_.range().sub(0, uint64_t(rows) * n_vocab_ * sizeof(float)));
    model_.build_forward(g, step, kv, logits, {n_tokens, all_logits});
    baked = std::make_unique<graph::BakedGraph>(std::move(g).bake());
    return *baked;
}

std::span<const float> Session::run_chunk(std::span<const int32_t> tokens, bool all_logits) {
    const uint32_t n = uint32_t(tokens.size());
    const uint32_t bucket = n == 1 ? 1 : std::bit_ceil(n);
    const uint32_t padding = bucket - n;
    // Padding rows go first, so the last row is always the last token; they write no cache cell.
    std::vector<int32_t> ids(bucket, tokens[0]), positions(bucket, int32_t(n_past_)), slots(bucket, -1);
    for (uint32_t t = 0; t < n; ++t) {
        ids[padding + t] = tokens[t];
        positions[padding + t] = slots[padding + t] = int32_t(n_past_ + t);
    }
    ids_.write(0, std::as_bytes(std::span(ids)));
    positions_.write(0, std::as_bytes(std::span(positions)));
    slots_.write(0, std::as_bytes(std::span(slots)));
    graph_for(bucket, all_logits).replay();
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
    const uint32_t chunk = all_logits ? n_logit_rows_ : n_ubatch_;
    std::span<const float> logits;
    for (size_t done = 0; done < tokens.size(); done += chunk) {
        logits = run_chunk(tokens.subspan(done, std::min<size_t>(chunk, tokens.size() - done)), all_logits != nullptr);
        if (all_logits) all_logits->insert(all_logits->end(), logits.begin(), logits.end());
    }
    return all_logits ? logits.last(n_vocab_) : logits;
}

void Session::truncate(uint32_t n) {
    if (n > n_past_) fail("cannot truncate {} tokens to {}", n_past_, n);
    n_past_ = n;
}

}  // namespace vkllm::model
