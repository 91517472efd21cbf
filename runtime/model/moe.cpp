#include "model/moe.h"

#include <fmt/format.h>

#include "core/error.h"
#include "ops/copy.h"
#include "ops/expert_matmul.h"

namespace vkllm::model::blocks {
namespace {

constexpr uint64_t f32 = sizeof(float);

std::string layer_name(int layer, std::string_view what) { return fmt::format("blk.{}.{}", layer, what); }

// A chunk's per-expert lists of (token, slot) entries (ops::moe_group).
struct ExpertLists {
    graph::Region counts, entries;
};

// Bytes the selected experts' rows take: `experts` active experts' share of the stack.
uint64_t active_bytes(const Weight& stack, const ops::ExpertRows& select, uint32_t experts) {
    return stack.bytes() / select.n_expert * select.rows / select.expert_rows * experts;
}

// One token: y[slot] = W_{ids[slot]} in[slot], its rows at y[slot * y_stride + y_offset].
void expert_matvec(Builder& b, const std::string& name, const Weight& stack, const ops::ExpertRows& select,
                   const ops::ExpertInput& input, graph::Region ids, graph::Region y, uint32_t y_stride,
                   uint32_t y_offset, uint32_t n_used) {
    b.add(name, ops::matvec_id(b.device, stack.matrix(b.graph), select, input, ids, {y, y_stride, y_offset}, n_used),
          active_bytes(stack, select, n_used));
}

// The x of a chunk's expert products: [token][cols], or [token][slot][cols] per slot. With
// int8_where_it_pays (the gate and up products, blocks.h) and where the device's integer dot products
// pay for a stack's type (ops/matmul.h), the products read its int8 blocks instead, quantized once for
// all the stacks that take them.
struct ChunkInput {
    graph::Region x;
    bool per_slot = false;
    Activations activations = Activations::Float;
    std::optional<graph::Region> x_int8;
};

// A chunk: y[entry] = W_e x[entry or token] over each expert's entries.
void expert_matmul(Builder& b, const std::string& name, const Weight& stack, const ops::ExpertRows& select,
                   ChunkInput& input, const ExpertLists& lists, graph::Region y, uint32_t n_used) {
    const uint32_t n_tokens = b.shape.n_tokens;
    const bool int8 =
        input.activations == int8_where_it_pays && ops::int8_activations_pay(b.device.caps(), stack.type);
    if (int8 && !input.x_int8) {
        const uint32_t x_rows = input.per_slot ? n_tokens * n_used : n_tokens;
        input.x_int8 = b.graph.transient(name + ".x_int8", ops::int8_activation_bytes(x_rows, stack.cols));
        b.graph.add(name + ".quantize", ops::quantize_q8(b.device, input.x, *input.x_int8, x_rows, stack.cols));
    }
    // Each expert any token selected is read once per chunk.
    const uint32_t experts_read = std::min(select.n_expert, n_tokens * n_used);
    b.add(name,
          ops::matmul_id(b.device, stack.matrix(b.graph), select, int8 ? *input.x_int8 : input.x, input.per_slot,
                         lists.counts, lists.entries, y, n_tokens, n_used,
                         ops::matmul_id_config(b.device.caps(), stack.type, select, n_tokens, n_used, int8)),
          active_bytes(stack, select, experts_read));
}

// One token: each slot's gate and up rows side by side ([gate | up], one product for a fused stack);
// the down projection forms act(gate) * up as it reads them. Returns the experts' outputs [slot][n_embd].
graph::Region routed_experts_decode(Builder& b, int layer, graph::Region normed, graph::Region ids,
                                    const MoeWeights& w, const MoeSpec& spec) {
    const uint32_t n_expert = spec.routing.n_expert, n_used = spec.routing.n_expert_used, n_ff = spec.n_ff_exp;
    const uint32_t n_embd = w.gate_inp.cols;
    auto gate_up = b.graph.transient(layer_name(layer, "ffn_moe_gate_up"), uint64_t(n_used) * 2 * n_ff * f32);
    const ops::ExpertInput input{normed};
    if (w.gate_up_exps) {
        expert_matvec(b, layer_name(layer, "ffn_gate_up_exps"), *w.gate_up_exps, {n_expert, 2 * n_ff, 0, 2 * n_ff},
                      input, ids, gate_up, 0, 0, n_used);
    } else {
        expert_matvec(b, layer_name(layer, "ffn_gate_exps"), *w.gate_exps, {n_expert, n_ff, 0, n_ff}, input, ids,
                      gate_up, 2 * n_ff, 0, n_used);
        expert_matvec(b, layer_name(layer, "ffn_up_exps"), *w.up_exps, {n_expert, n_ff, 0, n_ff}, input, ids, gate_up,
                      2 * n_ff, n_ff, n_used);
    }
    auto out = b.graph.transient(layer_name(layer, "ffn_moe_down"), uint64_t(n_used) * n_embd * f32);
    expert_matvec(b, layer_name(layer, "ffn_down_exps"), w.down_exps, {n_expert, n_embd, 0, n_embd},
                  {gate_up, true, spec.activation}, ids, out, 0, 0, n_used);
    return out;
}

// A chunk: the tokens listed per expert, each expert's gate, up and down rows read once per tile of
// its tokens. Returns the experts' outputs [token][slot][n_embd].
graph::Region routed_experts_chunk(Builder& b, int layer, graph::Region normed, graph::Region ids,
                                   const MoeWeights& w, const MoeSpec& spec) {
    const uint32_t n_expert = spec.routing.n_expert, n_used = spec.routing.n_expert_used, n_ff = spec.n_ff_exp;
    const uint32_t n_embd = w.gate_inp.cols, n_tokens = b.shape.n_tokens;
    const uint64_t slots = uint64_t(n_tokens) * n_used;
    const ExpertLists lists{
        b.graph.transient(layer_name(layer, "ffn_moe_counts"), n_expert * 4),
        b.graph.transient(layer_name(layer, "ffn_moe_entries"), ops::moe_group_entries_bytes(n_expert, n_tokens))};
    b.graph.add(layer_name(layer, "ffn_moe_group"),
                ops::moe_group(b.device, ids, lists.counts, lists.entries, n_expert, n_used, n_tokens));
    auto gate = b.graph.transient(layer_name(layer, "ffn_moe_gate"), slots * n_ff * f32);
    auto up = b.graph.transient(layer_name(layer, "ffn_moe_up"), slots * n_ff * f32);
    ChunkInput input{normed, false, int8_where_it_pays};
    if (w.gate_up_exps) {
        // A fused stack gives each expert's gate rows, then its up rows: two products over one tensor.
        expert_matmul(b, layer_name(layer, "ffn_gate_exps"), *w.gate_up_exps, {n_expert, 2 * n_ff, 0, n_ff}, input,
                      lists, gate, n_used);
        expert_matmul(b, layer_name(layer, "ffn_up_exps"), *w.gate_up_exps, {n_expert, 2 * n_ff, n_ff, n_ff}, input,
                      lists, up, n_used);
    } else {
        expert_matmul(b, layer_name(layer, "ffn_gate_exps"), *w.gate_exps, {n_expert, n_ff, 0, n_ff}, input, lists,
                      gate, n_used);
        expert_matmul(b, layer_name(layer, "ffn_up_exps"), *w.up_exps, {n_expert, n_ff, 0, n_ff}, input, lists, up,
                      n_used);
    }
    auto hidden = b.graph.transient(layer_name(layer, "ffn_moe_hidden"), slots * n_ff * f32);
    b.graph.add(layer_name(layer, "ffn_moe_act"),
                ops::glu(b.device, spec.activation, gate, up, hidden, uint32_t(slots * n_ff)));
    auto out = b.graph.transient(layer_name(layer, "ffn_moe_down"), slots * n_embd * f32);
    ChunkInput hidden_input{hidden, true};
    expert_matmul(b, layer_name(layer, "ffn_down_exps"), w.down_exps, {n_expert, n_embd, 0, n_embd}, hidden_input,
                  lists, out, n_used);
    return out;
}

// out = down · act(gate · normed) * (up · normed) for the shared expert (not accumulated).
void shared_expert(Builder& b, int layer, graph::Region normed, const MoeWeights& w, const MoeSpec& spec,
                   graph::Region out) {
    const uint32_t n_ff = spec.n_ff_shexp;
    auto gate_up = b.graph.transient(layer_name(layer, "ffn_shexp_gate_up_out"), b.shape.n_tokens * 2 * n_ff * f32);
    project(b, layer_name(layer, "ffn_gate_up_shexp"), *w.gate_up_shexp, normed, gate_up, false, int8_where_it_pays);
    glu_down(b, layer_name(layer, "ffn_shexp"), gate_up, n_ff, spec.activation, layer_name(layer, "ffn_down_shexp"),
             *w.down_shexp, out, false);
}

}  // namespace

void check_moe(int layer, const MoeWeights& w, const MoeSpec& spec) {
    const std::string where = fmt::format("layer {} mixture of experts", layer);
    ops::check_moe_routing(spec.routing, where.c_str());
    const uint32_t n_expert = spec.routing.n_expert, n_embd = w.gate_inp.cols, n_ff = spec.n_ff_exp;
    auto expect = [&](const Weight* weight, uint32_t rows, uint32_t cols) {
        if (weight && (weight->rows != rows || weight->cols != cols))
            fail("{}: '{}' is {} x {}, expected {} x {}", where, weight->name, weight->rows, weight->cols, rows, cols);
    };
    expect(&w.gate_inp, n_expert, n_embd);
    expect(w.exp_probs_b, 1, n_expert);
    if (n_ff == 0 || (w.gate_up_exps != nullptr) == (w.gate_exps != nullptr || w.up_exps != nullptr) ||
        (!w.gate_up_exps && !(w.gate_exps && w.up_exps)))
        fail("{}: needs ffn_gate_up_exps or both ffn_gate_exps and ffn_up_exps, and an expert size", where);
    expect(w.gate_up_exps, n_expert * 2 * n_ff, n_embd);
    expect(w.gate_exps, n_expert * n_ff, n_embd);
    expect(w.up_exps, n_expert * n_ff, n_embd);
    expect(&w.down_exps, n_expert * n_embd, n_ff);
    if ((w.gate_up_shexp != nullptr) != (w.down_shexp != nullptr) ||
        (w.down_shexp != nullptr) != (spec.n_ff_shexp != 0))
        fail("{}: a shared expert needs its gate/up and down weights and its size", where);
    if (w.down_shexp) {
        uint32_t rows = 0;
        for (const Weight& part : w.gate_up_shexp->parts) {
            expect(&part, part.rows, n_embd);
            rows += part.rows;
        }
        if (rows != 2 * spec.n_ff_shexp)
            fail("{}: the shared expert's gate and up have {} rows, expected {}", where, rows, 2 * spec.n_ff_shexp);
        expect(w.down_shexp, n_embd, spec.n_ff_shexp);
    }
}

void ffn_moe(Builder& b, int layer, graph::Region normed, graph::Region x, const MoeWeights& w, const MoeSpec& spec) {
    check_moe(layer, w, spec);
    const ops::MoeRouting& routing = spec.routing;
    const uint32_t n_tokens = b.shape.n_tokens, n_embd = w.gate_inp.cols;
    const uint32_t n_expert = routing.n_expert, n_used = routing.n_expert_used;
    const uint64_t slots = uint64_t(n_tokens) * n_used;

    // Router logits, then the selected experts and their weights, all on the GPU.
    auto logits = b.graph.transient(layer_name(layer, "ffn_moe_logits"), n_tokens * n_expert * f32);
    project(b, layer_name(layer, "ffn_gate_inp"), w.gate_inp, normed, logits, false);
    auto ids = b.graph.transient(layer_name(layer, "ffn_moe_ids"), slots * 4);
    auto weights = b.graph.transient(layer_name(layer, "ffn_moe_weights"), slots * f32);
    b.graph.add(
        layer_name(layer, "ffn_moe_route"),
        ops::moe_route(b.device, routing, logits, w.exp_probs_b ? w.exp_probs_b->region(b.graph) : graph::Region{}, ids,
                       weights, n_tokens),
        w.exp_probs_b ? w.exp_probs_b->bytes() : 0);
    const graph::Region experts_out = n_tokens == 1 ? routed_experts_decode(b, layer, normed, ids, w, spec)
                                                    : routed_experts_chunk(b, layer, normed, ids, w, spec);

    // x += sum of the weighted experts (+ the shared expert), in llama.cpp's order.
    std::optional<graph::Region> shared;
    if (w.down_shexp) {
        shared = b.graph.transient(layer_name(layer, "ffn_shexp_out"), n_tokens * n_embd * f32);
        shared_expert(b, layer, normed, w, spec, *shared);
    }
    b.graph.add(layer_name(layer, "ffn_moe_combine"),
                ops::moe_combine(b.device, experts_out, weights, shared ? *shared : graph::Region{}, x, n_embd, n_used,
                                 n_tokens));
}

MoeWeights ExpertLayerWeights::weights() const {
    auto pointer = [](const auto& weight) { return weight ? &*weight : nullptr; };
    return {.gate_inp = ffn_gate_inp,
            .exp_probs_b = pointer(exp_probs_b),
            .gate_up_exps = pointer(ffn_gate_up_exps),
            .gate_exps = pointer(ffn_gate_exps),
            .up_exps = pointer(ffn_up_exps),
            .down_exps = ffn_down_exps,
            .gate_up_shexp = pointer(ffn_gate_up_shexp),
            .down_shexp = pointer(ffn_down_shexp)};
}

ExpertLayerWeights load_expert_layer(WeightLoader& loader, uint32_t il, uint32_t n_embd, uint32_t n_expert,
                                     uint32_t n_ff_exp, uint32_t n_ff_shexp, SelectionBias bias) {
    auto name = [il](const char* tensor) { return fmt::format("blk.{}.{}.weight", il, tensor); };
    const std::string bias_name = fmt::format("blk.{}.exp_probs_b.bias", il);
    ExpertLayerWeights l{
        .ffn_gate_inp = loader.load(name("ffn_gate_inp"), {n_embd, n_expert}),
        .exp_probs_b = bias == SelectionBias::Required ? loader.load(bias_name, {n_expert})
                                                       : loader.load_optional(bias_name, {n_expert}),
    };
    if (loader.has(name("ffn_gate_up_exps"))) {
        l.ffn_gate_up_exps = loader.load(name("ffn_gate_up_exps"), {n_embd, 2ull * n_ff_exp, n_expert});
    } else {
        l.ffn_gate_exps = loader.load(name("ffn_gate_exps"), {n_embd, n_ff_exp, n_expert});
        l.ffn_up_exps = loader.load(name("ffn_up_exps"), {n_embd, n_ff_exp, n_expert});
    }
    l.ffn_down_exps = loader.load(name("ffn_down_exps"), {n_ff_exp, n_embd, n_expert});
    if (n_ff_shexp) {
        const std::pair<std::string, uint32_t> gate_up[] = {{name("ffn_gate_shexp"), n_ff_shexp},
                                                            {name("ffn_up_shexp"), n_ff_shexp}};
        l.ffn_gate_up_shexp = loader.load_group(gate_up, n_embd);
        l.ffn_down_shexp = loader.load(name("ffn_down_shexp"), {n_ff_shexp, n_embd});
    }
    return l;
}

void load_feed_forward(WeightLoader& loader, uint32_t il, const BaseHparams& hp, const MoeLayers& moe,
                       SelectionBias bias, MoeLayerWeights& out) {
    auto name = [il](const char* tensor) { return fmt::format("blk.{}.{}.weight", il, tensor); };
    out.ffn_norm = loader.load(name("ffn_norm"), {hp.n_embd});
    if (il < moe.n_layer_dense_lead) {
        const std::pair<std::string, uint32_t> gate_up[] = {{name("ffn_gate"), hp.n_ff}, {name("ffn_up"), hp.n_ff}};
        out.ffn_gate_up = loader.load_group(gate_up, hp.n_embd);
        out.ffn_down = loader.load(name("ffn_down"), {hp.n_ff, hp.n_embd});
        return;
    }
    out.experts = load_expert_layer(loader, il, hp.n_embd, moe.routing.n_expert, moe.n_ff_exp,
                                    moe.n_ff_exp * moe.n_expert_shared, bias);
}

}  // namespace vkllm::model::blocks
