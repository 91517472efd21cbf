#include "model/memory_plan.h"

#include <unistd.h>

#include <algorithm>
#include <bit>
#include <map>

#include <fmt/format.h>

#include "core/error.h"
#include "model/hparams.h"
#include "model/session.h"

namespace vkllm::model {
namespace {

constexpr double MiB = 1024.0 * 1024.0;

// The dimensions the compute buffers scale with.
struct Dimensions {
    uint64_t n_embd = 0, n_ff = 0, qkv = 0, attn_out = 0, n_vocab = 0;
};

Dimensions read_dimensions(const gguf::File& file) {
    const auto arch = file.get_string("general.architecture");
    if (!arch) fail("{}: 'general.architecture' is missing; is this a model file?", file.name());
    const ArchKeys keys(file, std::string(*arch));
    const uint32_t n_layer = keys.u32("block_count");
    Dimensions d;
    d.n_embd = keys.u32("embedding_length");
    const uint32_t n_head = keys.uniform_u32("attention.head_count", 1, n_layer);
    const uint32_t n_head_kv = keys.uniform_u32("attention.head_count_kv", n_head, n_layer);
    const uint64_t head_dim_k = keys.u32("attention.key_length", uint32_t(d.n_embd / std::max(n_head, 1u)));
    const uint64_t head_dim_v = keys.u32("attention.value_length", uint32_t(d.n_embd / std::max(n_head, 1u)));
    d.qkv = n_head * head_dim_k + n_head_kv * (head_dim_k + head_dim_v);
    d.attn_out = n_head * head_dim_v;
    // A mixture of experts runs the routed experts' FFNs side by side.
    const uint64_t experts_ff = uint64_t(keys.u32("expert_feed_forward_length", 0)) * keys.u32("expert_used_count", 0);
    d.n_ff = std::max<uint64_t>(keys.uniform_u32("feed_forward_length", 0, n_layer), experts_ff);
    auto tokens = file.get_string_array("tokenizer.ggml.tokens");
    d.n_vocab = keys.u32("vocab_size", tokens ? uint32_t(tokens->size()) : 0);
    return d;
}

uint64_t host_ram() { return uint64_t(::sysconf(_SC_PHYS_PAGES)) * uint64_t(::sysconf(_SC_PAGE_SIZE)); }

// The layer of a "blk.N.*" tensor, or -1.
int layer_of(std::string_view name) {
    if (!name.starts_with("blk.")) return -1;
    int layer = 0;
    size_t i = 4;
    if (i >= name.size() || name[i] < '0' || name[i] > '9') return -1;
    for (; i < name.size() && name[i] >= '0' && name[i] <= '9'; ++i) layer = layer * 10 + (name[i] - '0');
    return i < name.size() && name[i] == '.' ? layer : -1;
}

// A set of tensors that moves to host memory together.
struct Unit {
    std::string what;
    std::vector<const gguf::Tensor*> tensors;
    uint64_t bytes = 0;
};

// The units in the order they move (see the header).
std::vector<Unit> host_units(const gguf::File& file) {
    Unit embedding{"token_embd"}, output{"output"};
    std::map<int, Unit, std::greater<>> ffn, attention;  // the last layer first
    for (const gguf::Tensor& tensor : file.tensors()) {
        if (tensor.n_dims < 2) continue;
        Unit* unit = nullptr;
        if (tensor.name == "token_embd.weight") unit = &embedding;
        else if (tensor.name == "output.weight") unit = &output;
        else if (const int layer = layer_of(tensor.name); layer >= 0)
            unit = tensor.name.substr(tensor.name.find('.', 4) + 1).starts_with("ffn_") ? &ffn[layer] : &attention[layer];
        if (!unit) continue;
        unit->tensors.push_back(&tensor);
        unit->bytes += tensor.nbytes;
    }
    std::vector<Unit> units;
    if (embedding.bytes) units.push_back(std::move(embedding));
    for (auto* kind : {&ffn, &attention})
        for (auto& [layer, unit] : *kind) {
            unit.what = fmt::format("{} of layer {}", kind == &ffn ? "FFN" : "attention", layer);
            units.push_back(std::move(unit));
        }
    if (output.bytes) units.push_back(std::move(output));
    return units;
}

// "FFN of layer 31", "FFN of layer 30" ... -> "FFN of layers 27-31".
std::string summarize(const std::vector<std::string>& whats) {
    std::string out;
    for (size_t i = 0; i < whats.size();) {
        const std::string& what = whats[i];
        const size_t of = what.find(" of layer ");
        size_t j = i + 1;
        if (of != std::string::npos) {
            const std::string kind = what.substr(0, of);
            while (j < whats.size() && whats[j].starts_with(kind + " of layer ")) ++j;
        }
        std::string item = what;
        if (j > i + 1)
            item = fmt::format("{} of layers {}-{}", what.substr(0, of), whats[j - 1].substr(of + 10), what.substr(of + 10));
        out += (out.empty() ? "" : ", ") + item;
        i = j;
    }
    return out;
}

uint64_t weight_total(const gguf::File& file) {
    uint64_t total = 0;
    for (const gguf::Tensor& tensor : file.tensors()) total += tensor.nbytes;
    return total;
}

// The plan at one context, weights moved to host memory as needed where `spill`; `why` says what
// does not fit (empty when it does).
MemoryPlan plan_at(const gguf::File& file, const KvLayout& layout, const MemoryRequest& request,
                   const MemoryBudget& budget, uint32_t n_ctx, bool spill, std::string& why) {
    MemoryPlan plan;
    plan.n_ctx = n_ctx;
    plan.budget = budget;
    plan.weights = weight_total(file);
    plan.kv = request.n_seq * kv_cache_bytes(layout, n_ctx, request.n_ubatch, request.kv_type);
    plan.compute = compute_bytes(file, request, n_ctx);
    why.clear();
    for (const KvLayerLayout& layer : layout.layers) {
        const uint32_t row = std::max(layer.k_row, layer.v_row);
        const uint64_t bytes =
            request.n_seq * ops::kv_cache_bytes(request.kv_type, kv_layer_cells(layer, n_ctx, request.n_ubatch), row);
        if (bytes > budget.binding_range) {
            why = fmt::format("a layer's KV cache of {} MiB is more than {} binds at once ({} MiB)", bytes >> 20,
                              budget.device, budget.binding_range >> 20);
            return plan;
        }
    }
    std::vector<std::string> moved;
    for (const Unit& unit : spill ? host_units(file) : std::vector<Unit>{}) {
        if (plan.device_local() <= budget.device_local) break;
        plan.weights_host += unit.bytes;
        for (const gguf::Tensor* tensor : unit.tensors) plan.host_tensors.emplace_back(tensor->name);
        moved.push_back(unit.what);
    }
    plan.host_units = summarize(moved);
    // Where device-local memory is host memory, both come out of the same RAM.
    const uint64_t host_budget = budget.unified ? budget.host - std::min(budget.host, plan.device_local()) : budget.host;
    if (plan.device_local() > budget.device_local)
        why = fmt::format("the KV cache ({} MiB), compute buffers ({} MiB) and the weights that must stay ({} MiB) need "
                          "{} MiB of device-local memory, {} MiB more than {} has", plan.kv >> 20, plan.compute >> 20,
                          plan.weights_device() >> 20, plan.device_local() >> 20,
                          (plan.device_local() - budget.device_local) >> 20, budget.device);
    else if (plan.weights_host > host_budget)
        why = fmt::format("{} MiB of weights do not fit in device-local memory and the host has {} MiB for them",
                          plan.weights_host >> 20, host_budget >> 20);
    return plan;
}

}  // namespace

bool MemoryPlan::in_host_memory(std::string_view tensor) const {
    return std::ranges::find(host_tensors, tensor) != host_tensors.end();
}

MemoryBudget MemoryBudget::of(const gpu::Capabilities& caps, uint64_t binding_range) {
    const std::string profile = caps.profile.empty() ? "" : " under VKLLM_DEVICE_PROFILE=" + caps.profile;
    return {.device = "'" + caps.name + "'" + profile, .device_local = caps.memory_budget, .host = host_ram(), .unified = caps.unified_memory(),
            .binding_range = binding_range};
}

uint64_t compute_bytes(const gguf::File& file, const MemoryRequest& request, uint32_t n_ctx) {
    const Dimensions d = read_dimensions(file);
    // The largest chunk a prompt runs in: a power of two up to n_ubatch.
    const uint64_t n = std::min<uint64_t>(std::bit_floor(request.n_ubatch), std::bit_ceil(std::max(n_ctx, 1u)));
    // Alive at the peak of a layer: the residual stream, and the FFN's gate/up rows with their
    // gathered halves (4 n_ff), or the normed rows, q/k/v and attention's output.
    const uint64_t transients =
        n * sizeof(float) * (d.n_embd + std::max(4 * d.n_ff, d.n_embd + d.qkv + d.attn_out));
    // The session's rows of logits: a whole chunk's, for runs that ask for every token's.
    const uint64_t logit_rows = std::max<uint64_t>(std::bit_floor(request.n_ubatch), request.n_seq);
    return transients + logit_rows * d.n_vocab * sizeof(float);
}

MemoryPlan plan_memory(const gguf::File& file, const KvLayout& layout, const MemoryRequest& request,
                       const MemoryBudget& budget) {
    std::string why;
    // The largest context up to `high` that fits, by bisection (a longer context never needs less
    // memory); 0 when none does.
    const auto largest = [&](uint32_t high, bool spill) {
        plan_at(file, layout, request, budget, high, spill, why);
        if (why.empty()) return high;
        uint32_t low = 0;
        while (high - low > 1) {
            const uint32_t mid = low + (high - low) / 2;
            plan_at(file, layout, request, budget, mid, spill, why);
            (why.empty() ? low : high) = mid;
        }
        return low;
    };
    if (request.n_ctx) {
        MemoryPlan plan = plan_at(file, layout, request, budget, request.n_ctx, true, why);
        if (why.empty()) return plan;
        const std::string reason = why;
        const uint32_t fits = largest(request.n_ctx, true);
        if (fits == 0) fail("{} does not fit on {} at any context: {}", file.name(), budget.device, reason);
        fail("a context of {} tokens needs {} MiB in all and does not fit: {}; lower -c to at most {}", request.n_ctx,
             plan.total() >> 20, reason, fits);
    }
    // The default context keeps the weights device-local: the largest that fits beside them, unless
    // that is shorter than min(wanted, 512); then weights move to host memory for that much.
    const auto arch = file.get_string("general.architecture");
    const auto n_ctx_train = arch ? file.get_u32(std::string(*arch) + ".context_length") : std::nullopt;
    const uint32_t wanted = std::clamp(n_ctx_train.value_or(4096), 1u, 4096u), floor = std::min(wanted, 512u);
    if (const uint32_t n_ctx = largest(wanted, false); n_ctx >= floor)
        return plan_at(file, layout, request, budget, n_ctx, false, why);
    const uint32_t n_ctx = largest(floor, true);
    if (n_ctx == 0) {
        plan_at(file, layout, request, budget, 1, true, why);
        fail("{} does not fit on {} at any context: {}", file.name(), budget.device, why);
    }
    return plan_at(file, layout, request, budget, n_ctx, true, why);
}

std::string MemoryPlan::describe() const {
    std::string out = fmt::format("memory plan at a context of {} tokens on {}:\n", n_ctx, budget.device);
    out += fmt::format("  weights         {:9.1f} MiB", weights / MiB);
    if (weights_host)
        out += fmt::format(" ({:.1f} MiB device-local, {:.1f} MiB in host memory: {})", weights_device() / MiB,
                           weights_host / MiB, host_units);
    out += fmt::format("\n  KV cache        {:9.1f} MiB\n", kv / MiB);
    out += fmt::format("  compute buffers {:9.1f} MiB\n", compute / MiB);
    out += fmt::format("  total           {:9.1f} MiB: {:.1f} MiB device-local of {:.1f} MiB{}\n", total() / MiB,
                       device_local() / MiB, budget.device_local / MiB,
                       budget.unified ? " (device-local memory is host memory)" : "");
    return out;
}

}  // namespace vkllm::model
