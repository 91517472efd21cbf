// vkllm synth --arch minimax-m3: a GGUF with MiniMax-M3's real attention and indexer dimensions
// (64 query heads and 4 KV heads of 128, partial RoPE 64, 4 index heads of 128, top 16 blocks of 128
// cells) but a narrow residual stream, few layers and small experts, with seeded random weights: for timing sparse attention
// against context length (vkllm bench --kv-fill). --dense leaves the indexer out, so the same model
// runs dense attention in every layer (llama.cpp's fallback), for comparison.
#include "synth_minimax.h"

#include <cstdio>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/error.h"
#include "gguf/quants.h"
#include "gguf/reader.h"
#include "gguf/writer.h"

namespace vkllm::cli {
namespace {

constexpr std::string_view arch = "minimax-m3";

struct Shape {
    // n_embd and the FFN sizes are cut (the real model has 3072 and 3072-wide experts): they only scale
    // the projections, and keep the file small enough to bench on a CPU Vulkan device.
    uint32_t n_embd = 1024, n_layer = 3, n_dense_lead = 1, n_head = 64, n_head_kv = 4, head_dim = 128, n_rot = 64;
    uint32_t n_ff = 1024, n_expert = 4, n_expert_used = 2, n_ff_exp = 512, n_expert_shared = 1;
    uint32_t index_heads = 4, index_dim = 128, top_k = 16, block_size = 128, local_blocks = 1;
    uint32_t n_ctx_train = 65536;
};

struct Settings {
    std::string out, vocab;
    gguf::GgmlType type = gguf::GgmlType::F16;
    uint64_t seed = 1;
    bool dense = false;
};

Settings minimax_settings(const SynthSettings& command_line) {
    Settings options{.out = command_line.out, .vocab = command_line.vocab, .seed = command_line.seed,
                     .dense = command_line.dense};
    if (command_line.type == "f32") options.type = gguf::GgmlType::F32;
    else if (command_line.type == "q8_0") options.type = gguf::GgmlType::Q8_0;
    else if (!command_line.type.empty() && command_line.type != "f16")
        fail("--type {}: synth --arch minimax-m3 writes f32, f16 or q8_0", command_line.type);
    if (!command_line.preset.empty()) fail("--preset {}: synth --arch minimax-m3 has one shape and no presets", command_line.preset);
    if (command_line.experts) fail("--experts: synth --arch minimax-m3 has its own 4 experts");
    return options;
}

// splitmix64 over the seed and the tensor name, so each tensor's values depend on nothing else.
class Random {
public:
    Random(uint64_t seed, std::string_view name) : state_(seed) {
        for (char c : name) state_ = (state_ ^ uint8_t(c)) * 0x100000001b3ull;
    }
    float uniform() {  // [-1, 1)
        uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return float((z ^ (z >> 31)) >> 40) * 0x1.0p-24f * 2.0f - 1.0f;
    }

private:
    uint64_t state_;
};

struct TensorPlan {
    std::string name;
    std::vector<uint64_t> ne;
    gguf::GgmlType type;
    bool norm;  // values near 1, as trained RMSNorm scales are; else uniform with deviation 1/sqrt(ne[0])
};

std::vector<TensorPlan> plan_tensors(const Shape& s, const Settings& options, uint64_t n_vocab) {
    const gguf::GgmlType f32 = gguf::GgmlType::F32, matrix = options.type;
    std::vector<TensorPlan> plan = {{"token_embd.weight", {s.n_embd, n_vocab}, matrix, false},
                                    {"output_norm.weight", {s.n_embd}, f32, true},
                                    {"output.weight", {s.n_embd, n_vocab}, matrix, false}};
    const uint64_t q_rows = uint64_t(s.n_head) * s.head_dim, kv_rows = uint64_t(s.n_head_kv) * s.head_dim;
    for (uint32_t il = 0; il < s.n_layer; ++il) {
        auto add = [&](std::string_view tensor, std::vector<uint64_t> ne, gguf::GgmlType type, bool norm = false) {
            plan.push_back({fmt::format("blk.{}.{}", il, tensor), std::move(ne), type, norm});
        };
        add("attn_norm.weight", {s.n_embd}, f32, true);
        add("attn_q.weight", {s.n_embd, q_rows}, matrix);
        add("attn_k.weight", {s.n_embd, kv_rows}, matrix);
        add("attn_v.weight", {s.n_embd, kv_rows}, matrix);
        add("attn_q_norm.weight", {s.head_dim}, f32, true);
        add("attn_k_norm.weight", {s.head_dim}, f32, true);
        add("attn_output.weight", {q_rows, s.n_embd}, matrix);
        add("ffn_norm.weight", {s.n_embd}, f32, true);
        if (il < s.n_dense_lead) {
            add("ffn_gate.weight", {s.n_embd, s.n_ff}, matrix);
            add("ffn_up.weight", {s.n_embd, s.n_ff}, matrix);
            add("ffn_down.weight", {s.n_ff, s.n_embd}, matrix);
            continue;
        }
        add("ffn_gate_inp.weight", {s.n_embd, s.n_expert}, f32);  // llama.cpp keeps the router in F32
        add("exp_probs_b.bias", {s.n_expert}, f32);
        add("ffn_gate_exps.weight", {s.n_embd, s.n_ff_exp, s.n_expert}, matrix);
        add("ffn_up_exps.weight", {s.n_embd, s.n_ff_exp, s.n_expert}, matrix);
        add("ffn_down_exps.weight", {s.n_ff_exp, s.n_embd, s.n_expert}, matrix);
        add("ffn_gate_shexp.weight", {s.n_embd, s.n_ff_exp * s.n_expert_shared}, matrix);
        add("ffn_up_shexp.weight", {s.n_embd, s.n_ff_exp * s.n_expert_shared}, matrix);
        add("ffn_down_shexp.weight", {s.n_ff_exp * s.n_expert_shared, s.n_embd}, matrix);
        if (options.dense) continue;
        // The PR keeps the indexer projections in F32: they decide which blocks are read.
        add("indexer.q_proj.weight", {s.n_embd, uint64_t(s.index_heads) * s.index_dim}, f32);
        add("indexer.k_proj.weight", {s.n_embd, s.index_dim}, f32);
        add("indexer.q_norm.weight", {s.index_dim}, f32, true);
        add("indexer.k_norm.weight", {s.index_dim}, f32, true);
    }
    return plan;
}

void add_metadata(gguf::Writer& w, const Shape& s, const Settings& options, const SynthVocab& vocab) {
    auto key = [](std::string_view suffix) { return fmt::format("{}.{}", arch, suffix); };
    w.add_string("general.architecture", arch);
    w.add_string("general.name", fmt::format("vkllm-synth-minimax-m3{}-{}", options.dense ? "-dense" : "",
                                             gguf::type_name(options.type)));
    w.add_u32(key("context_length"), s.n_ctx_train);
    w.add_u32(key("embedding_length"), s.n_embd);
    w.add_u32(key("block_count"), s.n_layer);
    w.add_u32(key("feed_forward_length"), s.n_ff);
    w.add_u32(key("attention.head_count"), s.n_head);
    w.add_u32(key("attention.head_count_kv"), s.n_head_kv);
    w.add_u32(key("attention.key_length"), s.head_dim);
    w.add_u32(key("attention.value_length"), s.head_dim);
    w.add_f32(key("attention.layer_norm_rms_epsilon"), 1e-6f);
    w.add_u32(key("rope.dimension_count"), s.n_rot);
    w.add_f32(key("rope.freq_base"), 5e6f);
    w.add_u32(key("leading_dense_block_count"), s.n_dense_lead);
    w.add_u32(key("expert_count"), s.n_expert);
    w.add_u32(key("expert_used_count"), s.n_expert_used);
    w.add_u32(key("expert_feed_forward_length"), s.n_ff_exp);
    w.add_u32(key("expert_shared_count"), s.n_expert_shared);
    w.add_f32(key("expert_weights_scale"), 2.0f);
    w.add_bool(key("expert_weights_norm"), true);
    w.add_u32(key("expert_gating_func"), 2);
    if (!options.dense) {
        w.add_u32(key("attention.indexer.head_count"), s.index_heads);
        w.add_u32(key("attention.indexer.key_length"), s.index_dim);
        w.add_u32(key("attention.indexer.top_k"), s.top_k);
        w.add_u32(key("attention.indexer.block_size"), s.block_size);
        w.add_u32(key("attention.indexer.local_blocks"), s.local_blocks);
    }
    vocab.add_to(w);
}

}  // namespace

int synth_minimax_m3(const SynthSettings& command_line) {
    const Settings options = minimax_settings(command_line);
    const SynthVocab vocab(options.vocab);
    const Shape shape;
    const std::vector<TensorPlan> plan = plan_tensors(shape, options, vocab.n_tokens());
    gguf::Writer writer;
    add_metadata(writer, shape, options, vocab);
    writer.add_u32("general.file_type", gguf::find_weight_type(options.type)->file_type);
    for (const TensorPlan& tensor : plan) writer.declare_tensor(tensor.name, tensor.type, tensor.ne);
    // One tensor in memory at a time.
    writer.write_streaming(options.out, [&](size_t index, const gguf::Writer::TensorSink& sink) {
        const TensorPlan& tensor = plan[index];
        uint64_t count = 1;
        for (uint64_t dim : tensor.ne) count *= dim;
        Random random(options.seed, tensor.name);
        const float scale = tensor.norm ? 0.1f : std::sqrt(3.0f / float(tensor.ne[0]));
        std::vector<float> values(count);
        for (float& v : values) v = (tensor.norm ? 1.0f : 0.0f) + scale * random.uniform();
        std::vector<std::byte> data(count / tensor.ne[0] * gguf::row_bytes(tensor.type, tensor.ne[0]));
        gguf::quantize(tensor.type, values, data);
        sink(data);
    });
    std::printf("wrote %s: minimax-m3%s, %zu tensors\n", options.out.c_str(), options.dense ? " (dense attention)" : "",
                plan.size());
    return 0;
}

}  // namespace vkllm::cli
