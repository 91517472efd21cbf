// MiniMax-M3 (GGUF arch "minimax-m3"): GQA with per-head QK RMSNorm and partial NeoX RoPE; dense
// leading layers, then MiniMax sparse attention (a light indexer picks the top-k blocks of 128 cache
// cells per KV group; the group's heads attend to those only) with a mixture of experts (sigmoid
// scoring, expert bias for selection only, normalised and scaled weights, a shared expert); every
// feed-forward uses the clamped SwiGLU-OAI. Numerics: ../shared/docs/model-notes.md C.6, C.0.
#include <cmath>

#include <fmt/format.h>

#include "core/error.h"
#include "model/architectures.h"
#include "model/blocks.h"
#include "model/hparams.h"
#include "model/moe.h"
#include "ops/attention.h"
#include "ops/kv_write.h"
#include "ops/rope.h"
#include "ops/sparse_attention.h"
#include "ops/topk.h"

namespace vkllm::model {
namespace {

constexpr uint64_t f32 = sizeof(float);

// The leading dense layers have dense attention too.
struct Hparams : BaseHparams, blocks::MoeLayers {
    ops::RopeConfig rope;  // NeoX on the first n_rot dims of every q, k and indexer head
    ops::MsaConfig msa;    // attention.indexer.*; top_k 0: no sparse layer (dense everywhere)
};

struct IndexerWeights {
    Weight q_proj;  // indexer.q_proj {n_embd, n_index_head*index_dim}
    Weight k_proj;  // indexer.k_proj {n_embd, index_dim}
    Weight q_norm;  // indexer.q_norm {index_dim}, shared by the index heads
    Weight k_norm;  // indexer.k_norm {index_dim}
};

struct LayerWeights : blocks::MoeLayerWeights {
    Weight attn_norm;    // {n_embd}
    Weight attn_q;       // {n_embd, n_head*head_dim}
    Weight attn_k;       // {n_embd, n_head_kv*head_dim}
    Weight attn_v;       // {n_embd, n_head_kv*head_dim_v}
    Weight attn_q_norm;  // {head_dim}, shared by the heads
    Weight attn_k_norm;  // {head_dim}
    Weight attn_output;  // {n_head*head_dim_v, n_embd}
    std::optional<IndexerWeights> indexer;  // sparse layers
};

struct Weights {
    Weight token_embd;   // {n_embd, n_vocab}
    Weight output_norm;  // {n_embd}
    Weight output;       // {n_embd, n_vocab}; never tied
    std::vector<LayerWeights> layers;
    gpu::Buffer rope_phases;  // ops::rope_phase_table(hp.rope)
};

ops::MsaConfig read_indexer(const ArchKeys& keys, const BaseHparams& hp) {
    ops::MsaConfig msa{.n_index_head = keys.u32("attention.indexer.head_count", 0),
                       .index_dim = keys.u32("attention.indexer.key_length", 0),
                       .block_size = keys.u32("attention.indexer.block_size", 0),
                       .top_k = keys.u32("attention.indexer.top_k", 0),
                       .local_blocks = keys.u32("attention.indexer.local_blocks", 0)};
    if (msa.n_index_head == 0 || msa.top_k == 0) return {};  // llama.cpp: MSA off, dense attention
    if (msa.n_index_head != hp.n_head_kv || msa.index_dim == 0 || msa.index_dim % 4 != 0 || msa.block_size == 0 ||
        msa.top_k > ops::max_top_k || hp.n_rot > msa.index_dim)
        fail("{}: the indexer needs one head per KV head ({}, has {}), a key length that is a multiple of 4 and holds "
             "the {} RoPE dims (has {}), blocks of at least one cell (has {}) and top-k of at most {} (has {})",
             keys.file().name(), hp.n_head_kv, msa.n_index_head, hp.n_rot, msa.index_dim, msa.block_size,
             ops::max_top_k, msa.top_k);
    return msa;
}

Hparams read_hparams(const gguf::File& file, const std::string& arch) {
    ArchKeys keys(file, arch);
    Hparams hp{read_base_hparams(keys)};
    if (hp.n_rot % 2 != 0 || hp.n_rot > hp.head_dim_k || hp.head_dim_k % 4 != 0 || hp.head_dim_v % 4 != 0)
        fail("{}: rope.dimension_count {} must be even and at most the head size {}, and heads multiples of 4",
             file.name(), hp.n_rot, hp.head_dim_k);
    hp.rope = read_rope(keys, hp.n_rot, ops::RopeMode::Neox, /*read_yarn_betas=*/false);
    hp.msa = read_indexer(keys, hp);
    hp.n_layer_dense_lead = std::min(keys.u32("leading_dense_block_count", 0), hp.n_layer);
    if (hp.n_layer_dense_lead < hp.n_layer) {
        if (keys.u32("expert_gating_func") != uint32_t(ops::MoeScoring::Sigmoid))
            fail("{}: '{}' must be 2 (sigmoid) for this architecture", file.name(), keys.key("expert_gating_func"));
        hp.routing = {.n_expert = keys.u32("expert_count"),
                      .n_expert_used = keys.u32("expert_used_count"),
                      .scoring = ops::MoeScoring::Sigmoid,
                      .norm_topk = file.get_bool(keys.key("expert_weights_norm")).value_or(false),
                      .routed_scale = keys.f32("expert_weights_scale", 0.0f)};
        ops::check_moe_routing(hp.routing, file.name().c_str());
        hp.n_ff_exp = keys.u32("expert_feed_forward_length");
        hp.n_expert_shared = keys.u32("expert_shared_count");
    }
    return hp;
}

bool is_sparse(const Hparams& hp, uint32_t il) { return il >= hp.n_layer_dense_lead && hp.msa.top_k != 0; }

void load_attention(WeightLoader& loader, const Hparams& hp, uint32_t il, LayerWeights& l) {
    auto name = [il](const char* tensor) { return fmt::format("blk.{}.{}.weight", il, tensor); };
    const uint64_t n_embd = hp.n_embd;
    l.attn_norm = loader.load(name("attn_norm"), {n_embd});
    l.attn_q = loader.load(name("attn_q"), {n_embd, hp.n_head * hp.head_dim_k});
    l.attn_k = loader.load(name("attn_k"), {n_embd, hp.n_head_kv * hp.head_dim_k});
    l.attn_v = loader.load(name("attn_v"), {n_embd, hp.n_head_kv * hp.head_dim_v});
    l.attn_q_norm = loader.load(name("attn_q_norm"), {hp.head_dim_k});
    l.attn_k_norm = loader.load(name("attn_k_norm"), {hp.head_dim_k});
    l.attn_output = loader.load(name("attn_output"), {hp.n_head * hp.head_dim_v, n_embd});
    if (is_sparse(hp, il))
        l.indexer = IndexerWeights{
            .q_proj = loader.load(name("indexer.q_proj"), {n_embd, hp.msa.n_index_head * hp.msa.index_dim}),
            .k_proj = loader.load(name("indexer.k_proj"), {n_embd, hp.msa.index_dim}),
            .q_norm = loader.load(name("indexer.q_norm"), {hp.msa.index_dim}),
            .k_norm = loader.load(name("indexer.k_norm"), {hp.msa.index_dim})};
}

Weights load_weights(gpu::Device& device, const gguf::File& file, const Hparams& hp, const LoadOptions& options) {
    WeightLoader loader(device, file, options.progress, options.placement);
    Weights w;
    w.token_embd = loader.load("token_embd.weight", {hp.n_embd, hp.n_vocab});
    w.output_norm = loader.load("output_norm.weight", {hp.n_embd});
    w.output = loader.load("output.weight", {hp.n_embd, hp.n_vocab});
    w.layers.resize(hp.n_layer);
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        load_attention(loader, hp, il, w.layers[il]);
        blocks::load_feed_forward(loader, il, hp, hp, blocks::SelectionBias::Required, w.layers[il]);
    }
    w.rope_phases = loader.rope_phases(hp.rope);
    loader.finish();
    return w;
}

std::string layer_name(int layer, std::string_view what) { return fmt::format("blk.{}.{}", layer, what); }

class MinimaxM3 final : public ArchitectureModel<Hparams, Weights> {
public:
    MinimaxM3(gpu::Device& device, const gguf::File& file, const std::string& arch, const LoadOptions& options)
        : ArchitectureModel(device, file, arch, read_hparams(file, arch)) {
        load(file, options, load_weights);
    }

    // K and V per layer; sparse layers also keep each token's f32 index key.
    KvLayout kv_layout() const override {
        KvLayout layout;
        for (uint32_t il = 0; il < hp_.n_layer; ++il)
            layout.layers.push_back({.k_row = hp_.n_head_kv * hp_.head_dim_k, .v_row = hp_.n_head_kv * hp_.head_dim_v,
                                     .extra_row = is_sparse(hp_, il) ? hp_.msa.index_dim : 0});
        return layout;
    }

    void build_forward(graph::Graph& g, const StepInputs& step, const KvCacheRegions& kv, graph::Region logits,
                       ForwardShape shape) const override {
        blocks::Builder b{g, device_, step, shape};
        auto x = g.transient("inp_embd", uint64_t(shape.n_tokens) * hp_.n_embd * f32);
        blocks::input_embeddings(b, w_.token_embd, x);
        const graph::Region phases = g.persistent("rope_phases", w_.rope_phases.range());
        const blocks::MoeSpec moe{.routing = hp_.routing, .n_ff_exp = hp_.n_ff_exp,
                                  .n_ff_shexp = hp_.n_ff_exp * hp_.n_expert_shared, .activation = ops::Glu::SwiGluOai};
        for (uint32_t il = 0; il < hp_.n_layer; ++il) {
            const LayerWeights& l = w_.layers[il];
            // x += attn(norm(x)): dense in the leading layers, over the indexer's blocks after
            attention(b, int(il), x, l, kv.layers[il], kv.type, phases);
            // x += ffn(norm(x)): dense SwiGLU-OAI in the leading layers, experts after
            if (il < hp_.n_layer_dense_lead) {
                blocks::ffn_glu(b, int(il), x, {l.ffn_norm, l.ffn_gate_up, *l.ffn_down}, ops::Glu::SwiGluOai, hp_.n_ff,
                                hp_.rms_eps);
                continue;
            }
            auto normed = g.transient(layer_name(int(il), "ffn_norm_out"), uint64_t(shape.n_tokens) * hp_.n_embd * f32);
            blocks::rms_norm(b, layer_name(int(il), "ffn_norm"), x, l.ffn_norm, normed, hp_.n_embd, hp_.rms_eps);
            blocks::ffn_moe(b, int(il), normed, x, l.experts->weights(), moe);
        }
        blocks::output_head(b, x, w_.output_norm, w_.output, logits, hp_.rms_eps);
    }

private:
    // rows [n_tokens][n_head][head_dim] = RoPE(RMSNorm_per_head(W · normed, norm)) (model-notes.md C.6).
    graph::Region head_projection(blocks::Builder& b, const std::string& name, graph::Region normed,
                                  const Weight& weight, const Weight& norm, uint32_t n_head, uint32_t head_dim,
                                  graph::Region phases) const {
        auto rows = b.graph.transient(name, uint64_t(b.shape.n_tokens) * n_head * head_dim * f32);
        blocks::project(b, name + "_proj", weight, normed, rows, false);
        blocks::rms_norm(b, name + "_norm", rows, norm, rows, head_dim, hp_.rms_eps);
        b.graph.add(name + "_rope", ops::rope(b.device, hp_.rope, {b.shape.n_tokens, n_head, head_dim, 0}, phases,
                                              b.step.positions, rows));
        return rows;
    }

    void attention(blocks::Builder& b, int il, graph::Region x, const LayerWeights& l, const KvLayerRegions& cache,
                   ops::KvType kv_type, graph::Region phases) const {
        const uint32_t n_tokens = b.shape.n_tokens;
        const ops::AttentionConfig config{hp_.n_head, hp_.n_head_kv, hp_.head_dim_k, hp_.head_dim_v,
                                          1.0f / std::sqrt(float(hp_.head_dim_k))};
        auto normed = b.graph.transient(layer_name(il, "attn_norm_out"), uint64_t(n_tokens) * hp_.n_embd * f32);
        blocks::rms_norm(b, layer_name(il, "attn_norm"), x, l.attn_norm, normed, hp_.n_embd, hp_.rms_eps);
        auto q = head_projection(b, layer_name(il, "attn_q"), normed, l.attn_q, l.attn_q_norm, hp_.n_head, hp_.head_dim_k, phases);
        auto k = head_projection(b, layer_name(il, "attn_k"), normed, l.attn_k, l.attn_k_norm, hp_.n_head_kv, hp_.head_dim_k, phases);
        auto v = b.graph.transient(layer_name(il, "attn_v"), uint64_t(n_tokens) * hp_.n_head_kv * hp_.head_dim_v * f32);
        blocks::project(b, layer_name(il, "attn_v_proj"), l.attn_v, normed, v, false);
        const uint32_t k_row = hp_.n_head_kv * hp_.head_dim_k, v_row = hp_.n_head_kv * hp_.head_dim_v;
        b.graph.add(
            layer_name(il, "cache_k"),
            ops::kv_write(b.device, kv_type, {n_tokens, k_row, k_row, cache.n_cells_all}, k, cache.slots, cache.k));
        b.graph.add(
            layer_name(il, "cache_v"),
            ops::kv_write(b.device, kv_type, {n_tokens, v_row, v_row, cache.n_cells_all}, v, cache.slots, cache.v));

        const ops::AttentionShape shape{n_tokens, cache.n_cells, kv_type};
        auto out = b.graph.transient(layer_name(il, "attn_out"), uint64_t(n_tokens) * hp_.n_head * hp_.head_dim_v * f32);
        if (l.indexer)
            sparse_attention(b, il, config, shape, normed, *l.indexer, q, cache, out, phases);
        else
            blocks::sequence_attention(b, layer_name(il, "attn"), config, shape, q, hp_.n_head * hp_.head_dim_k, cache,
                                       false, out);
        blocks::project(b, layer_name(il, "attn_output"), l.attn_output, out, x, true);
    }

    // The indexer's queries and this step's index keys, the keys cached; then each token's blocks
    // selected over its sequence's index keys, and each group's heads over them.
    void sparse_attention(blocks::Builder& b, int il, const ops::AttentionConfig& config, ops::AttentionShape shape,
                          graph::Region normed, const IndexerWeights& w, graph::Region q, const KvLayerRegions& cache,
                          graph::Region out, graph::Region phases) const {
        const ops::MsaConfig& msa = hp_.msa;
        const uint32_t n_tokens = b.shape.n_tokens;
        auto index_q = head_projection(b, layer_name(il, "indexer_q"), normed, w.q_proj, w.q_norm, msa.n_index_head,
                                       msa.index_dim, phases);
        auto index_k = head_projection(b, layer_name(il, "indexer_k"), normed, w.k_proj, w.k_norm, 1, msa.index_dim, phases);
        b.graph.add(layer_name(il, "indexer_cache_k"), ops::msa_key_write(b.device, msa, n_tokens, 0, cache.n_cells_all,
                                                                          index_k, cache.slots, cache.extra));
        shape.seq_cells = blocks::sequence_cells(b, cache);
        const ops::MsaSelection selection = select_blocks(b, il, index_q, cache, shape.seq_cells);
        b.graph.add(layer_name(il, "msa_attn"),
                    ops::msa_attention(b.device, config, msa, shape,
                                       {q, cache.cells.k, cache.cells.v, b.step.positions, out, selection}));
    }

    // The top-k blocks of each token's sequence's index keys for its index queries.
    ops::MsaSelection select_blocks(blocks::Builder& b, int il, graph::Region index_q, const KvLayerRegions& cache,
                                    uint32_t seq_cells) const {
        const ops::MsaConfig& msa = hp_.msa;
        const ops::MsaShape shape{.n_tokens = b.shape.n_tokens, .n_cells = cache.n_cells, .seq_cells = seq_cells};
        const uint64_t selected_bytes =
            uint64_t(shape.n_tokens) * msa.n_index_head * ops::msa_selected(msa, shape.n_cells) * f32;
        auto scores = b.graph.transient(layer_name(il, "msa_scores"), selected_bytes);
        auto blocks = b.graph.transient(layer_name(il, "msa_blocks"), selected_bytes);
        auto scratch = b.graph.transient(layer_name(il, "msa_scratch"), ops::msa_select_scratch_bytes(msa, shape));
        const ops::MsaSelection selection{scores, blocks};
        b.add(layer_name(il, "indexer"),
              ops::msa_select(b.device, msa, shape, index_q, cache.cells.extra, b.step.positions, selection, scratch));
        return selection;
    }
};

}  // namespace

std::unique_ptr<Model> make_minimax_m3(gpu::Device& device, const gguf::File& file, const std::string& arch,
                                       const LoadOptions& options) {
    return std::make_unique<MinimaxM3>(device, file, arch, options);
}

}  // namespace vkllm::model
