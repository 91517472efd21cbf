// BERT (GGUF arch "bert": bge, all-MiniLM and the other sentence-transformers encoders): token,
// learned position and token-type embeddings (every token of type 0, "sentence A", as llama.cpp
// hard-codes it) and a LayerNorm; then post-norm layers, x = norm(x + attn(x)), x = norm(x + ffn(x)),
// with attention that sees the whole input both ways and no RoPE, a GELU (tanh) feed-forward, and a
// bias on every projection. No output head: the last layer's output is what embeddings pool
// (engine/embeddings.h). As llama.cpp's models/bert.cpp and llama_model_bert::load_arch_tensors; K
// and V go through the session's f16 cache, as llama.cpp's flash attention casts them.
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/error.h"
#include "gguf/quants.h"
#include "model/architectures.h"
#include "model/blocks.h"
#include "model/hparams.h"
#include "ops/copy.h"
#include "ops/elementwise.h"
#include "ops/embed.h"
#include "ops/gelu.h"
#include "ops/kv_write.h"
#include "ops/layernorm.h"

namespace vkllm::model {
namespace {

constexpr uint64_t f32 = sizeof(float);

// BaseHparams::rms_eps holds the LayerNorm epsilon (attention.layer_norm_epsilon).
struct Hparams : BaseHparams {};

struct LayerWeights {
    WeightGroup attn_qkv;                  // attn_q, attn_k, attn_v {n_embd, n_embd}, or attn_qkv {n_embd, 3 n_embd}
    std::optional<Weight> attn_qkv_b;      // their biases, [3 n_embd]
    Weight attn_output;                    // {n_embd, n_embd}
    std::optional<Weight> attn_output_b;   // {n_embd}
    Weight attn_output_norm, attn_output_norm_b;    // {n_embd}
    Weight ffn_up;                         // {n_embd, n_ff}
    std::optional<Weight> ffn_up_b;        // {n_ff}
    Weight ffn_down;                       // {n_ff, n_embd}
    std::optional<Weight> ffn_down_b;      // {n_embd}
    Weight layer_output_norm, layer_output_norm_b;  // {n_embd}
};

struct Weights {
    Weight token_embd;                 // {n_embd, n_vocab}
    Weight position_embd;              // {n_embd, n_ctx_train}
    std::optional<Weight> token_type;  // row 0 of token_types {n_embd, n_token_types}, in f32
    Weight token_embd_norm, token_embd_norm_b;  // {n_embd}
    std::vector<LayerWeights> layers;
};

Hparams read_hparams(const gguf::File& file) {
    ArchKeys keys(file, "bert");
    Hparams hp{read_base_hparams(keys, "attention.layer_norm_epsilon")};
    if (file.get_bool(keys.key("attention.causal")).value_or(false))
        fail("{}: '{}' is true; vkllm runs BERT with its attention both ways only", file.name(), keys.key("attention.causal"));
    if (hp.n_head_kv != hp.n_head || hp.head_dim_k != hp.head_dim_v || hp.n_head * hp.head_dim_k != hp.n_embd)
        fail("{}: {} heads of {} (keys {}, values {}) do not make the embedding of {}, as BERT's attention needs",
             file.name(), hp.n_head, hp.n_head_kv, hp.head_dim_k, hp.head_dim_v, hp.n_embd);
    if (hp.n_ff == 0) fail("{}: '{}' must be positive", file.name(), keys.key("feed_forward_length"));
    return hp;
}

// Norms and biases, which the elementwise passes read as f32 (llama.cpp's converter keeps 1-D tensors F32).
Weight checked_f32(const gguf::File& file, Weight weight) {
    if (weight.type != gguf::GgmlType::F32)
        fail("{}: tensor '{}' is {}; vkllm reads norms and biases in F32", file.name(), weight.name,
             gguf::type_name(weight.type));
    return weight;
}

Weight load_vector(WeightLoader& loader, const gguf::File& file, const std::string& name, uint64_t n) {
    return checked_f32(file, loader.load(name, {n}));
}

std::optional<Weight> load_optional_vector(WeightLoader& loader, const gguf::File& file, const std::string& name,
                                           uint64_t n) {
    if (!loader.has(name)) return std::nullopt;
    return load_vector(loader, file, name, n);
}

// Row 0 of token_types, widened to f32 once: the row every token adds.
std::optional<Weight> load_token_type(gpu::Device& device, const gguf::File& file, uint32_t n_embd) {
    const gguf::Tensor* types = file.find_tensor("token_types.weight");
    if (!types) return std::nullopt;
    file.require_supported(*types);
    if (types->ne[0] != n_embd || types->ne[1] == 0 || types->ne[2] != 1 || types->ne[3] != 1)
        fail("{}: tensor 'token_types.weight' has shape {}, expected {} x the token types", file.name(),
             types->shape_string(), n_embd);
    std::vector<float> row = gguf::dequantize(*types);
    row.resize(n_embd);
    Weight weight{"token_types.row0", gguf::GgmlType::F32, 1, n_embd, {}};
    weight.buffer = device.allocator().create(n_embd * f32, gpu::MemoryDomain::DeviceMapped);
    weight.buffer.write(0, std::as_bytes(std::span(row)));
    return weight;
}

// Q, K and V with their biases: three tensors each, as the converter writes them, or one fused.
void load_qkv(WeightLoader& loader, const gguf::File& file, uint32_t il, uint32_t n_embd, LayerWeights& l) {
    const auto name = [il](const char* tensor, const char* kind) { return fmt::format("blk.{}.{}.{}", il, tensor, kind); };
    if (loader.has(name("attn_qkv", "weight"))) {
        l.attn_qkv.parts.push_back(loader.load(name("attn_qkv", "weight"), {n_embd, 3 * uint64_t(n_embd)}));
        l.attn_qkv_b = load_optional_vector(loader, file, name("attn_qkv", "bias"), 3 * uint64_t(n_embd));
        return;
    }
    const std::pair<std::string, uint32_t> weights[] = {
        {name("attn_q", "weight"), n_embd}, {name("attn_k", "weight"), n_embd}, {name("attn_v", "weight"), n_embd}};
    l.attn_qkv = loader.load_group(weights, n_embd);
    const int biases = loader.has(name("attn_q", "bias")) + loader.has(name("attn_k", "bias")) + loader.has(name("attn_v", "bias"));
    if (biases == 0) return;
    if (biases != 3) fail("{}: layer {} has biases for some of attn_q, attn_k and attn_v, not all three", file.name(), il);
    // Rows of one n_embd-long bias each, consecutive: one f32 vector [q | k | v], as the rows of qkv.
    const std::pair<std::string, uint32_t> bias_rows[] = {
        {name("attn_q", "bias"), 1}, {name("attn_k", "bias"), 1}, {name("attn_v", "bias"), 1}};
    WeightGroup group = loader.load_group(bias_rows, n_embd);
    if (group.parts.size() != 1) fail("{}: layer {}'s attn_q, attn_k and attn_v biases differ in type", file.name(), il);
    l.attn_qkv_b = checked_f32(file, std::move(group.parts[0]));
}

Weights load_weights(gpu::Device& device, const gguf::File& file, const Hparams& hp, const LoadOptions& options) {
    WeightLoader loader(device, file, options.progress, options.placement);
    const uint64_t n_embd = hp.n_embd;
    Weights w{.token_embd = loader.load("token_embd.weight", {n_embd, hp.n_vocab}),
              .position_embd = loader.load("position_embd.weight", {n_embd, hp.n_ctx_train}),
              .token_type = load_token_type(device, file, hp.n_embd),
              .token_embd_norm = load_vector(loader, file, "token_embd_norm.weight", n_embd),
              .token_embd_norm_b = load_vector(loader, file, "token_embd_norm.bias", n_embd)};
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        const auto name = [il](const char* tensor, const char* kind) { return fmt::format("blk.{}.{}.{}", il, tensor, kind); };
        LayerWeights& l = w.layers.emplace_back();
        load_qkv(loader, file, il, hp.n_embd, l);
        l.attn_output = loader.load(name("attn_output", "weight"), {n_embd, n_embd});
        l.attn_output_b = load_optional_vector(loader, file, name("attn_output", "bias"), n_embd);
        l.attn_output_norm = load_vector(loader, file, name("attn_output_norm", "weight"), n_embd);
        l.attn_output_norm_b = load_vector(loader, file, name("attn_output_norm", "bias"), n_embd);
        l.ffn_up = loader.load(name("ffn_up", "weight"), {n_embd, hp.n_ff});
        l.ffn_up_b = load_optional_vector(loader, file, name("ffn_up", "bias"), hp.n_ff);
        l.ffn_down = loader.load(name("ffn_down", "weight"), {hp.n_ff, n_embd});
        l.ffn_down_b = load_optional_vector(loader, file, name("ffn_down", "bias"), n_embd);
        l.layer_output_norm = load_vector(loader, file, name("layer_output_norm", "weight"), n_embd);
        l.layer_output_norm_b = load_vector(loader, file, name("layer_output_norm", "bias"), n_embd);
    }
    loader.finish();
    return w;
}

class Bert final : public ArchitectureModel<Hparams, Weights> {
public:
    Bert(gpu::Device& device, const gguf::File& file, const std::string& arch, const LoadOptions& options)
        : ArchitectureModel(device, file, arch, read_hparams(file)) {
        info_.encoder = true;
        load(file, options, load_weights);
    }

    KvLayout kv_layout() const override {
        return {std::vector<KvLayerLayout>(hp_.n_layer, {.k_row = hp_.n_embd, .v_row = hp_.n_embd})};
    }

    void build_forward(graph::Graph& g, const StepInputs& step, const KvCacheRegions& kv, graph::Region out,
                       ForwardShape shape) const override {
        if (!shape.hidden) fail("{}: BERT has no output head; only its hidden states can be computed", info_.name);
        blocks::Builder b{g, device_, step, shape};
        const uint32_t n = shape.n_tokens, n_embd = hp_.n_embd;
        // x = norm(token + type 0 + position)
        auto x = g.transient("inp_embd", uint64_t(n) * n_embd * f32);
        b.add("token_embd", ops::get_rows(device_, w_.token_embd.matrix(g), step.ids, x, n));
        if (w_.token_type)
            g.add("token_types", ops::add(device_, x, w_.token_type->region(g), x, n * n_embd, n_embd));
        auto positions = g.transient("position_embd_out", uint64_t(n) * n_embd * f32);
        b.add("position_embd", ops::get_rows(device_, w_.position_embd.matrix(g), step.positions, positions, n));
        g.add("inp_embd_position", ops::add(device_, positions, x, x, n * n_embd, n * n_embd));
        layer_norm(b, "token_embd_norm", x, w_.token_embd_norm, w_.token_embd_norm_b, x);
        for (uint32_t il = 0; il < hp_.n_layer; ++il)
            build_layer(b, il, x, kv.layers[il], kv.type, il + 1 == hp_.n_layer ? out : x);
    }

private:
    void layer_norm(blocks::Builder& b, const std::string& name, graph::Region x, const Weight& weight,
                    const Weight& bias, graph::Region y) const {
        b.graph.add(name, ops::layernorm(device_, x, weight.region(b.graph), bias.region(b.graph), y, hp_.n_embd,
                                         b.shape.n_tokens, hp_.rms_eps),
                    weight.bytes() + bias.bytes());
    }

    // Each token's k or v, columns [column, column + n_embd) of its qkv row, into the cache: read in
    // place where that offset may be bound, else gathered first.
    void write_cache(blocks::Builder& b, const std::string& name, graph::Region qkv, uint32_t column,
                     const KvLayerRegions& cache, graph::Region cache_rows, ops::KvType kv_type) const {
        const uint32_t n = b.shape.n_tokens, n_embd = hp_.n_embd, qkv_size = 3 * n_embd;
        graph::Region rows = qkv.sub(column * f32, (uint64_t(n) * qkv_size - column) * f32);
        uint32_t stride = qkv_size;
        if (!b.graph.aligned(rows)) {
            rows = b.graph.transient(name + "_rows", uint64_t(n) * n_embd * f32);
            b.graph.add(name + "_gather", ops::copy_rows(device_, qkv, {qkv_size, column}, rows, {n_embd, 0}, n, n_embd));
            stride = n_embd;
        }
        b.graph.add(name, ops::kv_write(device_, kv_type, {n, n_embd, stride, cache.n_cells_all}, rows, cache.slots,
                                        cache_rows));
    }

    // x = norm(x + attn(x)); out = norm(x + ffn(x)).
    void build_layer(blocks::Builder& b, uint32_t il, graph::Region x, const KvLayerRegions& cache,
                     ops::KvType kv_type, graph::Region out) const {
        const LayerWeights& l = w_.layers[il];
        graph::Graph& g = b.graph;
        const auto name = [il](std::string_view what) { return fmt::format("blk.{}.{}", il, what); };
        const uint32_t n = b.shape.n_tokens, n_embd = hp_.n_embd, qkv_size = 3 * n_embd;

        auto qkv = g.transient(name("qkv"), uint64_t(n) * qkv_size * f32);
        blocks::linear(b, name("attn_qkv"), l.attn_qkv, l.attn_qkv_b, x, qkv);
        write_cache(b, name("cache_k"), qkv, n_embd, cache, cache.k, kv_type);
        write_cache(b, name("cache_v"), qkv, 2 * n_embd, cache, cache.v, kv_type);
        // Every token sees every key of its input: not causal, the queries read in place from qkv.
        const ops::AttentionConfig config{.n_head = hp_.n_head, .n_head_kv = hp_.n_head, .head_dim_k = hp_.head_dim_k,
                                          .head_dim_v = hp_.head_dim_v,
                                          .scale = 1.0f / std::sqrt(float(hp_.head_dim_k)), .causal = false};
        auto attn = g.transient(name("attn_out"), uint64_t(n) * n_embd * f32);
        blocks::sequence_attention(b, name("attn"), config, {n, cache.n_cells, kv_type, qkv_size}, qkv, qkv_size,
                                   cache, false, attn);
        blocks::linear(b, name("attn_output"), l.attn_output, l.attn_output_b, attn, x, /*accumulate=*/true);
        layer_norm(b, name("attn_output_norm"), x, l.attn_output_norm, l.attn_output_norm_b, x);

        auto up = g.transient(name("ffn_up_out"), uint64_t(n) * hp_.n_ff * f32);
        blocks::linear(b, name("ffn_up"), l.ffn_up, l.ffn_up_b, x, up);
        g.add(name("ffn_act"), ops::gelu(device_, up, up, n * hp_.n_ff));
        blocks::linear(b, name("ffn_down"), l.ffn_down, l.ffn_down_b, up, x, /*accumulate=*/true);
        layer_norm(b, name("layer_output_norm"), x, l.layer_output_norm, l.layer_output_norm_b, out);
    }
};

}  // namespace

std::unique_ptr<Model> make_bert(gpu::Device& device, const gguf::File& file, const std::string& arch,
                                 const LoadOptions& options) {
    return std::make_unique<Bert>(device, file, arch, options);
}

}  // namespace vkllm::model
