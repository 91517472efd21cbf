#pragma once
// The mixture-of-experts feed-forward block (model-notes.md C.0 "MoE", C.4-C.6), shared by the
// Mixtral-style `llama`, `deepseek2`/`mistral4` and `minimax-m3` layers. Routing runs on the GPU and
// nothing is read back: one token reads only its selected experts' rows (matvec_id), and a chunk of
// tokens is grouped by expert so each expert's weights are read once per chunk (matmul_id).
#include <cstdint>
#include <optional>

#include "model/blocks.h"
#include "model/hparams.h"
#include "model/weights.h"
#include "ops/elementwise.h"
#include "ops/moe_route.h"

namespace vkllm::model::blocks {

// One layer's MoE tensors as the loader uploads them. A 3-D expert tensor {cols, rows, n_expert} is
// one Weight of n_expert * rows rows (expert e's matrix is rows e*rows .. e*rows + rows - 1).
struct MoeWeights {
    const Weight& gate_inp;               // ffn_gate_inp {n_embd, n_expert}: router logits
    const Weight* exp_probs_b = nullptr;  // exp_probs_b.bias {n_expert}: added for selection only; null: none
    // Either fused ffn_gate_up_exps {n_embd, 2*n_ff_exp, n_expert} (each expert's gate rows, then its
    // up rows) or ffn_gate_exps and ffn_up_exps {n_embd, n_ff_exp, n_expert}; the others null.
    const Weight* gate_up_exps = nullptr;
    const Weight* gate_exps = nullptr;
    const Weight* up_exps = nullptr;
    const Weight& down_exps;                    // ffn_down_exps {n_ff_exp, n_embd, n_expert}
    const WeightGroup* gate_up_shexp = nullptr;  // ffn_gate_shexp, ffn_up_shexp {n_embd, n_ff_shexp}; null: none
    const Weight* down_shexp = nullptr;         // ffn_down_shexp {n_ff_shexp, n_embd}
};

// One layer's MoE tensors as loaded, owned by an architecture's layer; weights() lends them to ffn_moe.
struct ExpertLayerWeights {
    Weight ffn_gate_inp;                     // {n_embd, n_expert}
    std::optional<Weight> exp_probs_b;       // {n_expert}
    std::optional<Weight> ffn_gate_up_exps;  // {n_embd, 2*n_ff_exp, n_expert}, or the two below
    std::optional<Weight> ffn_gate_exps, ffn_up_exps;  // {n_embd, n_ff_exp, n_expert}
    Weight ffn_down_exps;                    // {n_ff_exp, n_embd, n_expert}
    std::optional<WeightGroup> ffn_gate_up_shexp;  // ffn_gate_shexp and ffn_up_shexp {n_embd, n_ff_shexp}
    std::optional<Weight> ffn_down_shexp;          // {n_ff_shexp, n_embd}

    MoeWeights weights() const;
};

enum class SelectionBias { Optional, Required };

// Loads layer il's router, selection bias (blk.N.exp_probs_b.bias), experts (fused gate_up or
// separate gate and up stacks) and, with n_ff_shexp > 0, the shared expert.
ExpertLayerWeights load_expert_layer(WeightLoader& loader, uint32_t il, uint32_t n_embd, uint32_t n_expert,
                                     uint32_t n_ff_exp, uint32_t n_ff_shexp, SelectionBias bias);

// Architectures whose first n_layer_dense_lead layers have a dense SwiGLU feed-forward and the others
// a mixture of experts with shared experts (deepseek2, mistral4, minimax-m3).
struct MoeLayers {
    uint32_t n_layer_dense_lead = 0;  // leading_dense_block_count
    uint32_t n_ff_exp = 0;            // expert_feed_forward_length
    uint32_t n_expert_shared = 0;     // expert_shared_count
    ops::MoeRouting routing;
};

// One layer's feed-forward in such an architecture.
struct MoeLayerWeights {
    Weight ffn_norm;                 // {n_embd}
    WeightGroup ffn_gate_up;         // leading layers: ffn_gate and ffn_up {n_embd, n_ff}
    std::optional<Weight> ffn_down;  // leading layers: {n_ff, n_embd}
    std::optional<ExpertLayerWeights> experts;  // the other layers
};

// Loads layer il's ffn_norm and its dense or expert weights into `out`.
void load_feed_forward(WeightLoader& loader, uint32_t il, const BaseHparams& hp, const MoeLayers& moe,
                       SelectionBias bias, MoeLayerWeights& out);

struct MoeSpec {
    ops::MoeRouting routing;  // n_expert, n_expert_used, scoring, groups, normalisation, routed scale
    uint32_t n_ff_exp = 0;    // expert_feed_forward_length (or feed_forward_length for Mixtral)
    uint32_t n_ff_shexp = 0;  // n_ff_exp * expert_shared_count; 0: no shared expert
    ops::Glu activation = ops::Glu::SwiGlu;  // of the routed and the shared experts
};

// x += shared(normed) + sum over the selected experts e (in selection order) of w_e * down_e(act(
// gate_e(normed), up_e(normed))), for the builder's tokens; normed and x are f32 [n_tokens][n_embd].
// Passes are named blk.N.ffn_moe_*; their weight bytes count the n_expert_used selected experts per
// token (and the shared expert), which is what decode reads. Throws vkllm::Error naming the layer on
// inconsistent weights and spec.
void ffn_moe(Builder& b, int layer, graph::Region normed, graph::Region x, const MoeWeights& weights,
             const MoeSpec& spec);

// Checks the weights' shapes against the spec (the loader checks each tensor; this checks that they
// agree with each other); ffn_moe calls it too.
void check_moe(int layer, const MoeWeights& weights, const MoeSpec& spec);

}  // namespace vkllm::model::blocks
