#include "model/blocks.h"

#include <fmt/format.h>

#include "core/error.h"
#include "ops/attention.h"
#include "ops/copy.h"
#include "ops/elementwise.h"
#include "ops/embed.h"
#include "ops/kv_write.h"
#include "ops/matmul.h"
#include "ops/matvec.h"
#include "ops/rmsnorm.h"

namespace vkllm::model::blocks {
namespace {

constexpr uint64_t f32 = sizeof(float);

std::string layer_name(int layer, std::string_view what) { return fmt::format("blk.{}.{}", layer, what); }

// A block's output added to the residual x: project_into(x, accumulate = true), or with a post-norm
// (Gemma 3) into a region of its own, then x += rmsnorm(y) * post_norm in one pass.
template <class ProjectInto>
void residual_add(Builder& b, const std::string& norm_name, graph::Region x, const Weight* post_norm, float eps,
                  ProjectInto project_into) {
    if (!post_norm) return project_into(x, true);
    auto y = b.graph.transient(norm_name + "_in", b.shape.n_tokens * post_norm->cols * f32);
    project_into(y, false);
    b.graph.add(norm_name,
                ops::rmsnorm_add(b.device, y, post_norm->region(b.graph), x, post_norm->cols, b.shape.n_tokens, eps),
                post_norm->bytes());
}

// Per-head RMSNorm of q and of k in place in each token's qkv row (Gemma 3's attn_q_norm, attn_k_norm),
// one pass for both.
void qk_norm(Builder& b, int layer, graph::Region qkv, const AttentionWeights& weights, const ops::AttentionConfig& c,
             float eps) {
    const uint32_t qkv_size = (c.n_head + c.n_head_kv) * c.head_dim_k + c.n_head_kv * c.head_dim_v;
    b.graph.add(layer_name(layer, "attn_qk_norm"),
                ops::rmsnorm_qk_heads(b.device, qkv, weights.q_norm->region(b.graph), weights.k_norm->region(b.graph),
                                      c.head_dim_k, c.n_head, c.n_head_kv, b.shape.n_tokens, qkv_size, eps),
                weights.q_norm->bytes() + weights.k_norm->bytes());
}

// The RMSNorm of x before a projection: for many tokens a norm pass into a new region, returned; for
// one token none, the projection's kernels normalizing x themselves (n_embd floats per workgroup,
// against the dispatch a norm pass costs).
std::optional<graph::Region> norm_pass(Builder& b, graph::Region x, const Weight& norm, float eps,
                                       const std::string& norm_name) {
    if (b.shape.n_tokens == 1) return std::nullopt;
    const uint32_t n_embd = norm.cols;
    auto normed = b.graph.transient(norm_name + "_out", b.shape.n_tokens * n_embd * f32);
    rms_norm(b, norm_name, x, norm, normed, n_embd, eps);
    return normed;
}

}  // namespace

void Builder::add(const std::string& name, const std::vector<graph::Dispatch>& dispatches, uint64_t weight_bytes) {
    for (size_t i = 0; i < dispatches.size(); ++i)
        graph.add(dispatches.size() == 1 ? name : fmt::format("{}.{}", name, i), dispatches[i], i == 0 ? weight_bytes : 0);
}

void project(Builder& b, const std::string& name, const Weight& weights, graph::Region x, graph::Region y,
             bool accumulate, Activations activations) {
    // A small batch reads each weight once for all its tokens (matvec_batch); more tokens take matmul,
    // with x quantized to int8 first where the device's integer dot products pay.
    const uint32_t n_tokens = b.shape.n_tokens;
    if (n_tokens <= ops::matvec_max_tokens)
        return b.add(name, ops::matvec_batch(b.device, weights.matrix(b.graph), x, y, n_tokens, accumulate),
                     weights.bytes());
    if (activations == Activations::Float || !ops::int8_activations_pay(b.device.caps(), weights.type))
        return b.add(name, ops::matmul(b.device, weights.matrix(b.graph), x, y, n_tokens, accumulate), weights.bytes());
    const graph::Region x_int8 = b.graph.transient(name + ".x_int8", ops::int8_activation_bytes(n_tokens, weights.cols));
    b.add(name, ops::matmul_int8(b.device, weights.matrix(b.graph), x, x_int8, y, n_tokens, accumulate),
          weights.bytes());
}

void project(Builder& b, const std::string& name, const WeightGroup& weights, graph::Region x, graph::Region y,
             bool accumulate, Activations activations) {
    if (weights.parts.size() == 1) return project(b, name, weights.parts[0], x, y, accumulate, activations);
    // Parts of different types fill their columns of the one output in turn: directly for one token,
    // through a block copy for many (each token's row interleaves the parts).
    if (accumulate) fail("{}: accumulating a projection of mixed weight types is not supported", name);
    const uint32_t n_tokens = b.shape.n_tokens;
    uint32_t total = 0, offset = 0;
    for (const Weight& part : weights.parts) total += part.rows;
    for (const Weight& part : weights.parts) {
        std::string part_name = fmt::format("{}[{}]", name, part.name);
        if (n_tokens == 1) {
            project(b, part_name, part, x, y.sub(offset * f32, part.rows * f32), false, activations);
        } else {
            auto part_out = b.graph.transient(part_name + ".out", uint64_t(n_tokens) * part.rows * f32);
            project(b, part_name, part, x, part_out, false, activations);
            b.graph.add(part_name + ".place",
                        ops::copy_rows(b.device, part_out, {part.rows, 0}, y, {total, offset}, n_tokens, part.rows));
        }
        offset += part.rows;
    }
}

namespace {

template <class Weights>
void linear_biased(Builder& b, const std::string& name, const Weights& weights, const std::optional<Weight>& bias,
                   graph::Region x, graph::Region y, bool accumulate) {
    project(b, name, weights, x, y, accumulate);
    if (!bias) return;
    const uint32_t rows = bias->rows * bias->cols;
    b.graph.add(name + ".bias", ops::add(b.device, y, bias->region(b.graph), y, b.shape.n_tokens * rows, rows));
}

}  // namespace

void linear(Builder& b, const std::string& name, const WeightGroup& weights, const std::optional<Weight>& bias,
            graph::Region x, graph::Region y, bool accumulate) {
    linear_biased(b, name, weights, bias, x, y, accumulate);
}

void linear(Builder& b, const std::string& name, const Weight& weights, const std::optional<Weight>& bias,
            graph::Region x, graph::Region y, bool accumulate) {
    linear_biased(b, name, weights, bias, x, y, accumulate);
}

void rms_norm(Builder& b, const std::string& name, graph::Region x, const Weight& weight, graph::Region y, uint32_t n,
              float eps) {
    uint32_t rows = uint32_t(x.size / (n * f32));
    b.graph.add(name, ops::rmsnorm(b.device, x, weight.region(b.graph), y, n, rows, eps), weight.bytes());
}

void project_input(Builder& b, const std::string& name, const Weight& weights, const ops::MatvecInput& input,
                   graph::Region y, bool accumulate) {
    b.add(name, ops::matvec(b.device, weights.matrix(b.graph), input, y, accumulate), weights.bytes());
}

void project_normed(Builder& b, const std::string& name, const WeightGroup& weights, graph::Region x,
                    const Weight& norm, float eps, graph::Region y, const std::string& norm_name,
                    Activations activations) {
    if (auto normed = norm_pass(b, x, norm, eps, norm_name))
        return project(b, name, weights, *normed, y, false, activations);
    uint32_t offset = 0;
    for (const Weight& part : weights.parts) {
        const std::string part_name = weights.parts.size() == 1 ? name : fmt::format("{}[{}]", name, part.name);
        project_input(b, part_name, part, ops::MatvecInput::rms_norm(x, norm.region(b.graph), eps),
                      y.sub(offset * f32, part.rows * f32), false);
        offset += part.rows;
    }
}

void project_normed(Builder& b, const std::string& name, const Weight& weights, graph::Region x, const Weight& norm,
                    float eps, graph::Region y, const std::string& norm_name) {
    if (auto normed = norm_pass(b, x, norm, eps, norm_name)) return project(b, name, weights, *normed, y, false);
    project_input(b, name, weights, ops::MatvecInput::rms_norm(x, norm.region(b.graph), eps), y, false);
}

void attention(Builder& b, const std::string& name, const ops::AttentionConfig& config,
               const ops::AttentionShape& shape, const AttentionRegions& regions) {
    const bool decode =
        shape.n_tokens == 1 || shape.seq_cells != 0 || !ops::attention_prefill_pays(b.device.caps(), config);
    auto scratch = b.graph.transient(name + "_scratch",
                                     std::max<uint64_t>(4, decode ? ops::attention_decode_scratch_bytes(config, shape)
                                                                  : ops::attention_prefill_scratch_bytes(config, shape)));
    const ops::AttentionBuffers buffers{regions.q, regions.k_cache, regions.v_cache, regions.positions, regions.out, scratch};
    b.add(name, decode ? ops::attention_decode(b.device, config, shape, buffers)
                       : ops::attention_prefill(b.device, config, shape, buffers));
}

uint32_t sequence_cells(const Builder& b, const KvLayerRegions& cache) {
    return b.step.rows_are_sequences ? cache.sequence_stride : 0;
}

void sequence_attention(Builder& b, const std::string& name, const ops::AttentionConfig& config,
                        ops::AttentionShape shape, graph::Region q, uint32_t q_floats, const KvLayerRegions& cache,
                        bool v_from_k, graph::Region out) {
    shape.q_stride = q_floats;
    shape.seq_cells = sequence_cells(b, cache);
    attention(b, name, config, shape,
              {q, cache.cells.k, v_from_k ? cache.cells.k : cache.cells.v, b.step.positions, out});
}

void attention_gqa(Builder& b, int layer, graph::Region x, const AttentionWeights& weights, const AttentionSpec& spec,
                   const KvLayerRegions& cache, ops::KvType kv_type) {
    const ops::AttentionConfig& c = spec.config;
    const uint32_t n_tokens = b.shape.n_tokens;
    const uint32_t q_size = c.n_head * c.head_dim_k, k_size = c.n_head_kv * c.head_dim_k;
    const uint32_t v_size = c.n_head_kv * c.head_dim_v, qkv_size = q_size + k_size + v_size;

    auto qkv = b.graph.transient(layer_name(layer, "qkv"), n_tokens * qkv_size * f32);
    project_normed(b, layer_name(layer, "attn_qkv"), weights.qkv, x, weights.norm, spec.rms_eps, qkv,
                   layer_name(layer, "attn_norm"));

    if (weights.q_norm) qk_norm(b, layer, qkv, weights, c, spec.rms_eps);
    // Each token's row of qkv holds its q, k and v: one pass rotates q in place (with the attention
    // temperature) and writes rope(k) and v into the cache.
    const ops::RopeKvShape rope_kv{.n_tokens = n_tokens, .n_head = c.n_head, .n_head_kv = c.n_head_kv,
                                   .head_dim = c.head_dim_k, .head_dim_v = c.head_dim_v, .token_stride = qkv_size,
                                   .n_cells = cache.n_cells_all, .temperature_beta = spec.temperature_beta,
                                   .temperature_length = spec.temperature_length};
    b.graph.add(layer_name(layer, "rope_kv"),
                ops::rope_kv_write(b.device, spec.rope, kv_type, rope_kv, spec.rope_phases, b.step.positions,
                                   cache.slots, qkv, cache.k, cache.v));

    // Attention reads the queries in place, in the rows of qkv.
    auto out = b.graph.transient(layer_name(layer, "attn_out"), n_tokens * c.n_head * c.head_dim_v * f32);
    sequence_attention(b, layer_name(layer, "attn"), c, {n_tokens, cache.n_cells, kv_type}, qkv, qkv_size, cache,
                       false, out);

    residual_add(b, layer_name(layer, "post_attention_norm"), x, weights.post_norm, spec.rms_eps,
                 [&](graph::Region y, bool accumulate) {
                     project(b, layer_name(layer, "attn_output"), weights.output, out, y, accumulate);
                 });
}

void glu_down(Builder& b, const std::string& prefix, graph::Region gate_up, uint32_t n_ff, ops::Glu activation,
              const std::string& down_name, const Weight& down, graph::Region y, bool accumulate) {
    const uint32_t n_tokens = b.shape.n_tokens;
    // One token's gate and up halves are contiguous: the down projection applies the activation as
    // it loads them, where recomputing it per row team is cheaper than a pass.
    if (n_tokens == 1 && ops::glu_input_pays(b.device.caps(), down.matrix(b.graph)))
        return project_input(b, down_name, down, ops::MatvecInput::glu(activation, gate_up), y, accumulate);
    // Otherwise an activation pass pairs them; many tokens' rows interleave the halves, so those are
    // gathered first.
    graph::Region gate = gate_up.sub(0, n_ff * f32), up = gate_up.sub(n_ff * f32, n_ff * f32);
    if (n_tokens > 1) {
        gate = b.graph.transient(prefix + "_gate_out", n_tokens * n_ff * f32);
        up = b.graph.transient(prefix + "_up_out", n_tokens * n_ff * f32);
        b.graph.add(prefix + "_gate_gather",
                    ops::copy_rows(b.device, gate_up, {2 * n_ff, 0}, gate, {n_ff, 0}, n_tokens, n_ff));
        b.graph.add(prefix + "_up_gather",
                    ops::copy_rows(b.device, gate_up, {2 * n_ff, n_ff}, up, {n_ff, 0}, n_tokens, n_ff));
    }
    auto hidden = b.graph.transient(prefix + "_hidden", n_tokens * n_ff * f32);
    b.graph.add(prefix + "_act", ops::glu(b.device, activation, gate, up, hidden, n_tokens * n_ff));
    project(b, down_name, down, hidden, y, accumulate);
}

void ffn_glu(Builder& b, int layer, graph::Region x, const FeedForwardWeights& weights, ops::Glu activation,
             uint32_t n_ff, float rms_eps) {
    const uint32_t n_tokens = b.shape.n_tokens;
    // Fused gate and up rows in one buffer: their matvec writes act(gate) * up itself, each activation
    // computed once, and the down projection reads a plain vector.
    if (weights.gate_up.parts.size() == 1) {
        const Weight& gate_up = weights.gate_up.parts[0];
        const ops::WeightMatrix matrix = gate_up.matrix(b.graph);
        if (ops::matvec_glu_supported(b.device.caps(), matrix, n_tokens)) {
            auto hidden = b.graph.transient(layer_name(layer, "ffn_hidden"), n_tokens * n_ff * f32);
            const std::string norm_name = layer_name(layer, "ffn_norm");
            const std::optional<graph::Region> normed = norm_pass(b, x, weights.norm, rms_eps, norm_name);
            const ops::MatvecInput input = normed ? ops::MatvecInput::plain(*normed)
                                                  : ops::MatvecInput::rms_norm(x, weights.norm.region(b.graph), rms_eps);
            b.add(layer_name(layer, "ffn_gate_up"), ops::matvec_glu(b.device, matrix, activation, input, hidden, n_tokens),
                  gate_up.bytes());
            return residual_add(b, layer_name(layer, "post_ffw_norm"), x, weights.post_norm, rms_eps,
                                [&](graph::Region y, bool accumulate) {
                                    project(b, layer_name(layer, "ffn_down"), weights.down, hidden, y, accumulate);
                                });
        }
    }
    auto gate_up = b.graph.transient(layer_name(layer, "gate_up"), n_tokens * 2 * n_ff * f32);
    project_normed(b, layer_name(layer, "ffn_gate_up"), weights.gate_up, x, weights.norm, rms_eps, gate_up,
                   layer_name(layer, "ffn_norm"), int8_where_it_pays);
    residual_add(b, layer_name(layer, "post_ffw_norm"), x, weights.post_norm, rms_eps,
                 [&](graph::Region y, bool accumulate) {
                     glu_down(b, layer_name(layer, "ffn"), gate_up, n_ff, activation, layer_name(layer, "ffn_down"),
                              weights.down, y, accumulate);
                 });
}

void output_head(Builder& b, graph::Region x, const Weight& norm, const Weight& output, graph::Region logits,
                 float rms_eps) {
    const uint32_t n_embd = norm.cols;
    if (b.shape.hidden) return rms_norm(b, "output_norm", x, norm, logits, n_embd, rms_eps);
    const uint32_t rows = b.shape.all_logits ? b.shape.n_tokens : 1;
    // Only the rows whose logits are wanted go through the final norm and the head.
    auto last = x.sub((b.shape.n_tokens - rows) * n_embd * f32, rows * n_embd * f32);
    Builder head{b.graph, b.device, b.step, {rows, b.shape.all_logits}};
    project_normed(head, "output", output, last, norm, rms_eps, logits, "output_norm");
}

void input_embeddings(Builder& b, const Weight& token_embd, graph::Region x) {
    const uint32_t n_tokens = b.shape.n_tokens, n_embd = token_embd.cols;
    if (b.step.embeddings)
        b.graph.add("inp_embd_copy",
                    ops::copy_rows(b.device, *b.step.embeddings, {n_embd, 0}, x, {n_embd, 0}, n_tokens, n_embd));
    else
        b.add("token_embd", ops::get_rows(b.device, token_embd.matrix(b.graph), b.step.ids, x, n_tokens));
}

}  // namespace vkllm::model::blocks
