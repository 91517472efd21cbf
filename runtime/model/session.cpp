#include "model/session.h"

#include <algorithm>
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
    n_ctx_ = options.n_ctx ? options.n_ctx : std::min(model.info().n_ctx_train, 4096u);
    if (n_ctx_ == 0) fail("the context size must be positive");
    gpu::Allocator& allocator = device.allocator();
    ids_ = allocator.create(sizeof(int32_t), gpu::MemoryDomain::DeviceMapped);
    positions_ = allocator.create(sizeof(int32_t), gpu::MemoryDomain::DeviceMapped);
    logits_ = allocator.create(uint64_t(n_vocab_) * sizeof(float), gpu::MemoryDomain::DeviceMapped);
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

graph::BakedGraph& Session::decode_graph() {
    if (decode_) return *decode_;
    graph::Graph g(device_);
    StepInputs step{g.persistent("inp_tokens", ids_.range()), g.persistent("inp_pos", positions_.range())};
    KvCacheRegions kv{{}, {}, n_ctx_, kv_type_};
    for (size_t il = 0; il < k_cache_.size(); ++il) {
        kv.k.push_back(g.persistent("cache_k_l" + std::to_string(il), k_cache_[il].range()));
        kv.v.push_back(g.persistent("cache_v_l" + std::to_string(il), v_cache_[il].range()));
    }
    model_.build_forward(g, step, kv, g.persistent("result_output", logits_.range()), {1, false});
    decode_ = std::make_unique<graph::BakedGraph>(std::move(g).bake());
    return *decode_;
}

std::span<const float> Session::eval(std::span<const int32_t> tokens, std::vector<float>* all_logits) {
    if (tokens.empty()) fail("nothing to evaluate: no tokens");
    if (uint64_t(n_past_) + tokens.size() > n_ctx_)
        fail("{} more tokens do not fit the context: {} of its {} tokens are used (raise it with -c)", tokens.size(),
             n_past_, n_ctx_);
    for (int32_t id : tokens)
        if (id < 0 || uint32_t(id) >= n_vocab_) fail("token id {} is outside the vocabulary of {}", id, n_vocab_);
    graph::BakedGraph& decode = decode_graph();
    std::span<const float> logits(reinterpret_cast<const float*>(logits_.range().mapped), n_vocab_);
    for (int32_t id : tokens) {
        int32_t position = int32_t(n_past_);
        ids_.write(0, std::as_bytes(std::span(&id, 1)));
        positions_.write(0, std::as_bytes(std::span(&position, 1)));
        decode.replay();
        ++n_past_;
        if (all_logits) all_logits->insert(all_logits->end(), logits.begin(), logits.end());
    }
    return logits;
}

void Session::truncate(uint32_t n) {
    if (n > n_past_) fail("cannot truncate {} tokens to {}", n_past_, n);
    n_past_ = n;
}

const graph::GraphStats& Session::decode_stats() { return decode_graph().stats(); }

void Session::dump_decode_graph(std::ostream& out) { decode_graph().dump(out); }

}  // namespace vkllm::model
