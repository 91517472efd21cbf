#pragma once
// The building blocks architectures share (model-notes.md C.0), each a short list of passes:
// projections (matvec for one token, matmul for many), GQA attention with RoPE and the KV cache,
// GLU feed-forward, and the output head. An architecture's build_layer strings them together.
#include <optional>
#include <string>

#include "graph/graph.h"
#include "model/forward.h"
#include "model/weights.h"
#include "ops/attention.h"
#include "ops/attention_config.h"
#include "ops/elementwise.h"
#include "ops/matvec.h"
#include "ops/rope_config.h"

namespace vkllm::model::blocks {

// What every block needs to add passes.
struct Builder {
    graph::Graph& graph;
    gpu::Device& device;
    const StepInputs& step;
    ForwardShape shape;

    // A pass per dispatch, named "name" (or "name.k" for the k-th of several), weight bytes on the first.
    void add(const std::string& name, const std::vector<graph::Dispatch>& dispatches, uint64_t weight_bytes = 0);
};

// How a projection over many tokens reads x: in float, or as the device prefers (int8 blocks where its
// integer dot products pay for the weight type, ops/matmul.h). Only the gate and up projections of
// feed-forwards and experts take the device's choice (Activations::int8_where_it_pays): int8 rounds
// each value by up to half of max |x| / 127 of its 32-value block, and every other product's error
// costs the logits more for its share of the work. Over random models of the fixtures' shapes
// (tests/model/test_int8_activations.cpp), each product alone in int8 moves the logits by (median
// relative RMS, mistral4 Q8_0): MLA's attn_q_a 1.1e-2, attn_q_b 1.2e-2, attn_kv_a_mqa 1.4e-2, the
// dense layer's ffn_down 1.2e-2 (heavy-tailed GLU outputs), attn_output 8.6e-3, the head 6.0e-3, the
// shared expert's down 6.6e-3 and the experts' 5.8e-3, against ffn_gate_up 1.0e-2 for the largest
// share of the work (llama: attn_qkv 3.7e-3, ffn_down 1.1e-2, ffn_gate_up 9.3e-3); all of them in int8
// land every family at 1.6e-2 to 2.3e-2, past the 30% margin under the 2.5e-2 criterion
// (docs/PERFORMANCE.md).
enum class Activations { Float, DeviceChoice };
inline constexpr Activations int8_where_it_pays = Activations::DeviceChoice;

// y = W x (y += W x with accumulate) for the builder's tokens; x [n_tokens][cols], y [n_tokens][rows].
// A group's parts write their rows in turn.
void project(Builder& b, const std::string& name, const WeightGroup& weights, graph::Region x, graph::Region y,
             bool accumulate, Activations activations = Activations::Float);
void project(Builder& b, const std::string& name, const Weight& weights, graph::Region x, graph::Region y,
             bool accumulate, Activations activations = Activations::Float);

// y = W x + bias (y += W x + bias with accumulate); bias f32 [rows of W], or none.
void linear(Builder& b, const std::string& name, const WeightGroup& weights, const std::optional<Weight>& bias,
            graph::Region x, graph::Region y, bool accumulate = false);
void linear(Builder& b, const std::string& name, const Weight& weights, const std::optional<Weight>& bias,
            graph::Region x, graph::Region y, bool accumulate = false);

void rms_norm(Builder& b, const std::string& name, graph::Region x, const Weight& weight, graph::Region y,
              uint32_t n, float eps);

// y (+)= W in for one token, the kernel forming `in` from its input's x (an RMSNorm, a GLU).
void project_input(Builder& b, const std::string& name, const Weight& weights, const ops::MatvecInput& input,
                   graph::Region y, bool accumulate);
// y = W rmsnorm(x) * norm: one fused pass per part for one token; a norm pass (norm_name) and the
// projection for many.
void project_normed(Builder& b, const std::string& name, const WeightGroup& weights, graph::Region x,
                    const Weight& norm, float eps, graph::Region y, const std::string& norm_name,
                    Activations activations = Activations::Float);
void project_normed(Builder& b, const std::string& name, const Weight& weights, graph::Region x, const Weight& norm,
                    float eps, graph::Region y, const std::string& norm_name);

struct AttentionWeights {
    const Weight& norm;
    const WeightGroup& qkv;  // rows: q, k, v
    const Weight& output;
    const Weight* q_norm = nullptr;     // per-head RMSNorm of q and of k before RoPE {head_dim} (Gemma 3)
    const Weight* k_norm = nullptr;
    const Weight* post_norm = nullptr;  // RMSNorm of the output before the residual add {n_embd} (Gemma 3)
};

struct AttentionSpec {
    ops::AttentionConfig config;
    ops::RopeConfig rope;
    graph::Region rope_phases;  // ops::rope_phase_table(rope), uploaded
    float rms_eps = 0;
    float temperature_beta = 0;  // Llama-4 attention temperature (B.5); 0: off
    uint32_t temperature_length = 0;
};

// The buffers of an attention pass (ops/attention.h): q, the caches, positions and the output.
struct AttentionRegions {
    graph::Region q, k_cache, v_cache, positions, out;
};

// out = attention of q over the cache, by the decode kernel for one token (or where the prefill
// kernel does not take the heads), else by the prefill kernel; with the scratch (and for decode the
// counters) the kernel needs, named after the pass.
void attention(Builder& b, const std::string& name, const ops::AttentionConfig& config,
               const ops::AttentionShape& shape, const AttentionRegions& regions);

// ops::AttentionShape::seq_cells of a step's attention over the cache: 0 where the tokens are one
// sequence's, else the cells from one sequence's block to the next (StepInputs::rows_are_sequences).
uint32_t sequence_cells(const Builder& b, const KvLayerRegions& cache);

// out = attention of q (rows of q_floats floats, read in place) over each token's sequence's cells
// (v_from_k: V read from the K cache as MLA does), one decode dispatch for a step over several
// sequences; out: rows of n_head * head_dim_v floats.
void sequence_attention(Builder& b, const std::string& name, const ops::AttentionConfig& config,
                        ops::AttentionShape shape, graph::Region q, uint32_t q_floats, const KvLayerRegions& cache,
                        bool v_from_k, graph::Region out);

// x += output · attention(rope(q), cache(rope(k), v)) over norm(x): the GQA layer half.
void attention_gqa(Builder& b, int layer, graph::Region x, const AttentionWeights& weights, const AttentionSpec& spec,
                   const KvLayerRegions& cache, ops::KvType kv_type);

struct FeedForwardWeights {
    const Weight& norm;
    const WeightGroup& gate_up;  // rows: gate, up
    const Weight& down;
    const Weight* post_norm = nullptr;  // RMSNorm of the output before the residual add {n_embd} (Gemma 3)
};

// y = down · act(gate) * up (y += with accumulate) from each token's row [gate | up] of gate_up, n_ff
// values each: for one token the down matvec forms act(gate) * up as it loads them where that pays
// (ops::glu_input_pays), else a pass named prefix + "_act" does (many tokens' halves gathered first).
void glu_down(Builder& b, const std::string& prefix, graph::Region gate_up, uint32_t n_ff, ops::Glu activation,
              const std::string& down_name, const Weight& down, graph::Region y, bool accumulate);

// x += down · act(gate · norm(x)) * (up · norm(x)). Gate and up fused in one buffer, for up to
// ops::matvec_max_tokens tokens: their matvec writes the activations (ops::matvec_glu); else glu_down.
void ffn_glu(Builder& b, int layer, graph::Region x, const FeedForwardWeights& weights, ops::Glu activation,
             uint32_t n_ff, float rms_eps);

// logits = output · norm(x) for the last token (or every token with shape.all_logits); with
// shape.hidden, logits = norm(x) of every token instead (the hidden states embeddings pool).
void output_head(Builder& b, graph::Region x, const Weight& norm, const Weight& output, graph::Region logits,
                 float rms_eps);

// x = the rows of token_embd for step.ids, or a copy of step.embeddings when the step carries them
// (an image's embeddings in place of its placeholder tokens).
void input_embeddings(Builder& b, const Weight& token_embd, graph::Region x);

}  // namespace vkllm::model::blocks
