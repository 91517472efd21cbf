// vkllm synth: a GGUF of a real model's shape with seeded random weights, for speed work and
// loader tests without downloading a model. The vocabulary (and so the tokenizer) is the bundled
// stories260K's 512-token SPM one, so every preset is small in its embedding and output matrices.
#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "../commands.h"
#include "../options.h"
#include "core/error.h"
#include "gguf/quants.h"
#include "gguf/reader.h"
#include "gguf/writer.h"
#include "synth_minimax.h"

namespace vkllm::cli {

namespace {

using WeightType = gguf::WeightTypeInfo;  // gguf/weight_types.def

constexpr std::string_view about =
    "A GGUF of a real model's shape with seeded random weights, for speed work and loader tests.\n"
    "  llama presets: tiny (n_embd 128, 3 layers, 4 heads, 2 kv heads, n_ff 256: the shared llama fixture's shape),\n"
    "           1b (Llama-3.2-1B's shape: n_embd 2048, 16 layers, 32 heads, 8 kv heads, n_ff 8192, context 4096)\n"
    "  gemma3 presets: 1b (Gemma-3-1B's shape: n_embd 1152, 26 layers, 4 heads and 1 kv head of 256, n_ff 6912,\n"
    "           5 of every 6 layers on a 512-token sliding window, tied output, context 32768)\n"
    "  minimax-m3 (no preset; --type f32, f16 or q8_0): MiniMax-M3's attention and indexer dims (64 heads and 4 KV\n"
    "           heads of 128, 4 index heads, top 16 blocks of 128), n_embd 1024, 3 layers (1 dense), 4 small experts\n"
    "  bert presets: tiny (n_embd 128, 2 layers, 4 heads, n_ff 512, 512 positions, biases and LayerNorms: an\n"
    "           encoder of all-MiniLM's form; --vocab a WordPiece vocabulary such as llama.cpp's ggml-vocab-bert-bge.gguf)\n"
    "  types: f32 f16 bf16 q4_0 q4_1 q5_0 q5_1 q8_0 q4_k q5_k q6_k (K-quants need n_embd and n_ff multiples of 256)\n"
    "  Every preset takes the 512-token SPM vocabulary of --vocab, so the 1b presets have the real models' layers\n"
    "  but not their 128256- or 262144-token embeddings.";

struct Preset {
    std::string_view arch, name;
    uint32_t n_embd, n_layer, n_head, n_head_kv, n_ff, n_ctx_train;
    float rope_freq_base;
    uint32_t head_dim = 0;  // 0: n_embd / n_head
    uint32_t n_swa = 0;     // gemma3: the local layers' sliding window

    uint32_t head_size() const { return head_dim ? head_dim : n_embd / n_head; }
    bool gemma() const { return arch == "gemma3"; }
};

constexpr std::array<Preset, 3> presets = {{
    {"llama", "tiny", 128, 3, 4, 2, 256, 2048, 10000.0f},
    {"llama", "1b", 2048, 16, 32, 8, 8192, 4096, 500000.0f},
    {"gemma3", "1b", 1152, 26, 4, 1, 6912, 32768, 1000000.0f, 256, 512},
}};

// The writer holds the whole file twice while writing it; larger files would need a streaming writer.
constexpr uint64_t max_file_bytes = uint64_t(3) << 30;

// The command line, or nothing when --help was asked.
std::optional<SynthSettings> parse_settings(Args args) {
    SynthSettings settings;
    Options parser("synth", "--arch llama|gemma3|minimax-m3|bert [--preset tiny|1b] [--type TYPE] -o FILE [options]", about);
    parser.add("--arch", settings.arch, "ARCH", "llama, gemma3, minimax-m3 or bert").required()
        .add("--preset", settings.preset, "NAME", "the shape: tiny or 1b (llama), 1b (gemma3)")
        .add("--type", settings.type, "TYPE", "the matrices' type (f16 for minimax-m3 when not given)")
        .add("-o,--output", settings.out, "FILE", "the GGUF to write").required()
        .add("--seed", settings.seed, "S", "the weights' seed")
        .add("--vocab", settings.vocab, "FILE", "the GGUF whose vocabulary the model takes")
        .add("--pooling", settings.pooling, "mean|cls|last", "bert: the pooling_type the file asks for (mean when not given)")
        .add("--experts", settings.experts, "N", "llama: Mixtral-style layers of N experts of n_ff each; 0: dense")
        .add("--experts-used", settings.experts_used, "K", "llama: experts used per token")
        .flag("--dense", settings.dense, "minimax-m3: no indexer, dense attention in every layer");
    if (!parser.parse(args)) return std::nullopt;
    if (settings.arch != "minimax-m3" && (settings.preset.empty() || settings.type.empty()))
        fail("--arch {} needs --preset and --type; see 'vkllm synth --help'", settings.arch);
    if ((settings.experts == 0) != (settings.experts_used == 0) || settings.experts_used > settings.experts)
        fail("--experts {} --experts-used {}: give both, with at most as many used as there are", settings.experts,
             settings.experts_used);
    return settings;
}

bool same_ignoring_case(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i])))
            return false;
    return true;
}

const Preset& find_preset(std::string_view arch, std::string_view name) {
    if (arch != "llama" && arch != "gemma3") fail("unknown --arch '{}'; synth knows: llama, gemma3, minimax-m3, bert", arch);
    for (const Preset& preset : presets)
        if (preset.arch == arch && preset.name == name) return preset;
    fail("unknown --preset '{}' for {}; presets: {}", name, arch, arch == "llama" ? "tiny, 1b" : "1b");
}

const WeightType& find_weight_type(std::string_view name) {
    std::string names;
    for (const WeightType& type : gguf::weight_types) {
        if (same_ignoring_case(type.name, name)) return type;
        names += (names.empty() ? "" : " ") + std::string(type.name);
    }
    fail("unknown --type '{}'; types: {}", name, names);
}

// splitmix64: a tiny generator whose stream depends only on its seed, the same on every platform.
class Random {
public:
    explicit Random(uint64_t seed) : state_(seed) {}
    uint64_t next() {
        uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }
    float uniform() { return float(next() >> 40) * 0x1.0p-24f * 2.0f - 1.0f; }  // [-1, 1)

private:
    uint64_t state_;
};

// Each tensor's values come from the seed and its name alone, so they don't depend on tensor order.
uint64_t tensor_seed(uint64_t seed, std::string_view name) {
    uint64_t hash = 0xcbf29ce484222325ull;  // FNV-1a
    for (char c : name) hash = (hash ^ uint8_t(c)) * 0x100000001b3ull;
    return Random(seed ^ hash).next();
}

// Rows quantize independently, so threads over row ranges give the same bytes as one thread; the
// K-quant reference quantizers search scales per block and take minutes for 1b on one core.
std::vector<std::byte> quantize_rows(gguf::GgmlType type, uint64_t cols, std::span<const float> values) {
    const uint64_t n_rows = values.size() / cols, bytes_per_row = gguf::row_bytes(type, cols);
    std::vector<std::byte> data(n_rows * bytes_per_row);
    const uint64_t n_threads = std::clamp<uint64_t>(std::thread::hardware_concurrency(), 1, n_rows);
    const uint64_t rows_per_thread = (n_rows + n_threads - 1) / n_threads;
    std::vector<std::jthread> threads;
    for (uint64_t first = 0; first < n_rows; first += rows_per_thread) {
        const uint64_t count = std::min(rows_per_thread, n_rows - first);
        threads.emplace_back([=, &data] {
            gguf::quantize(type, values.subspan(first * cols, count * cols),
                           std::span(data).subspan(first * bytes_per_row, count * bytes_per_row));
        });
    }
    return data;
}

class ModelWriter {
public:
    ModelWriter(const WeightType& type, uint64_t seed) : type_(type), seed_(seed) {}

    // A norm weight: F32 values near 1, as trained RMSNorm scales are.
    void add_norm(const std::string& name, uint64_t n) {
        Random random(tensor_seed(seed_, name));
        std::vector<float> values(n);
        for (float& v : values) v = 1.0f + 0.1f * random.uniform();
        add(name, gguf::GgmlType::F32, {n}, values);
    }

    // A matrix of `rows` outputs by `cols` inputs, uniform with standard deviation 1/sqrt(cols),
    // so each output of a matvec keeps about the scale of its input.
    // With `experts`, a stack of that many such matrices {cols, rows, experts} (ffn_*_exps).
    void add_matrix(const std::string& name, uint64_t cols, uint64_t rows, uint64_t experts = 0,
                    std::optional<gguf::GgmlType> type = std::nullopt) {
        Random random(tensor_seed(seed_, name));
        const float scale = std::sqrt(3.0f / float(cols));
        std::vector<float> values(cols * rows * std::max<uint64_t>(experts, 1));
        for (float& v : values) v = scale * random.uniform();
        std::vector<uint64_t> ne = {cols, rows};
        if (experts > 0) ne.push_back(experts);
        add(name, type.value_or(type_.type), ne, values);
    }

    // A bias: F32 values of a tenth of a matrix's scale.
    void add_bias(const std::string& name, uint64_t n) {
        Random random(tensor_seed(seed_, name));
        std::vector<float> values(n);
        for (float& v : values) v = 0.1f * random.uniform();
        add(name, gguf::GgmlType::F32, {n}, values);
    }

    gguf::Writer& writer() { return writer_; }
    uint64_t tensor_bytes() const { return tensor_bytes_; }

private:
    void add(const std::string& name, gguf::GgmlType type, std::vector<uint64_t> ne, std::span<const float> values) {
        const std::vector<std::byte> data = quantize_rows(type, ne[0], values);
        tensor_bytes_ += data.size();
        writer_.add_tensor(name, type, ne, data);
    }

    const WeightType& type_;
    uint64_t seed_;
    gguf::Writer writer_;
    uint64_t tensor_bytes_ = 0;
};

uint64_t matrix_bytes(gguf::GgmlType type, const Preset& p, uint64_t n_vocab, uint32_t experts) {
    const uint64_t q_dim = uint64_t(p.head_size()) * p.n_head, kv_dim = uint64_t(p.head_size()) * p.n_head_kv;
    const uint64_t ffn_copies = std::max<uint64_t>(experts, 1);
    const uint64_t per_layer = gguf::row_bytes(type, p.n_embd) * (q_dim + 2 * kv_dim) +
                               gguf::row_bytes(type, q_dim) * p.n_embd +
                               ffn_copies * (gguf::row_bytes(type, p.n_embd) * 2 * p.n_ff +
                                             gguf::row_bytes(type, p.n_ff) * p.n_embd) +
                               gguf::row_bytes(gguf::GgmlType::F32, p.n_embd) * experts;
    const uint64_t vocab_matrices = p.gemma() ? 1 : 2;  // Gemma ties the output to the embedding
    return per_layer * p.n_layer + vocab_matrices * gguf::row_bytes(type, p.n_embd) * n_vocab;
}

void check_fits(const WeightType& type, const Preset& preset, uint64_t n_vocab, uint32_t experts) {
    const uint32_t block = gguf::block_size(type.type);
    if (preset.n_embd % block != 0 || preset.n_ff % block != 0 || preset.head_size() % block != 0)
        fail("--type {} needs n_embd and n_ff to be multiples of {}, but preset '{}' has {} and {}; use q8_0 or "
             "another preset", type.name, block, preset.name, preset.n_embd, preset.n_ff);
    const uint64_t bytes = matrix_bytes(type.type, preset, n_vocab, experts);
    if (bytes > max_file_bytes)
        fail("preset '{}' in {} would be {} MiB, more than synth's {} MiB limit; choose a quantized type",
             preset.name, type.name, bytes >> 20, max_file_bytes >> 20);
}

void add_metadata(gguf::Writer& w, const Preset& p, const WeightType& type, const SynthSettings& options,
                  const gguf::File& vocab) {
    const uint32_t head_dim = p.head_size();
    const auto key = [&](std::string_view name) { return fmt::format("{}.{}", p.arch, name); };
    w.add_string("general.architecture", std::string(p.arch));
    const std::string experts = options.experts ? fmt::format("-{}x{}", options.experts_used, options.experts) : "";
    w.add_string("general.name", fmt::format("vkllm-synth-{}-{}{}-{}", p.arch, p.name, experts, type.name));
    w.add_u32("general.file_type", type.file_type);
    w.add_u32("general.quantization_version", 2);
    w.add_u32(key("context_length"), p.n_ctx_train);
    w.add_u32(key("embedding_length"), p.n_embd);
    w.add_u32(key("block_count"), p.n_layer);
    w.add_u32(key("feed_forward_length"), p.n_ff);
    w.add_u32(key("attention.head_count"), p.n_head);
    w.add_u32(key("attention.head_count_kv"), p.n_head_kv);
    w.add_f32(key("attention.layer_norm_rms_epsilon"), p.gemma() ? 1e-6f : 1e-5f);
    w.add_f32(key("rope.freq_base"), p.rope_freq_base);
    if (!p.gemma()) w.add_u32(key("rope.dimension_count"), head_dim);
    w.add_u32(key("attention.key_length"), head_dim);
    w.add_u32(key("attention.value_length"), head_dim);
    if (p.n_swa) w.add_u32(key("attention.sliding_window"), p.n_swa);
    if (options.experts > 0) {
        w.add_u32(key("expert_count"), options.experts);
        w.add_u32(key("expert_used_count"), options.experts_used);
    }
    for (const gguf::KeyValue& kv : vocab.metadata())
        if (kv.key.starts_with("tokenizer.ggml.")) w.add_value(kv.key, kv.value);
}

// --arch bert: an encoder of BERT's form (llama.cpp's bert tensors and keys) with the WordPiece
// vocabulary of --vocab; llama.cpp's pooling_type numbers: 1 mean, 2 cls, 3 last.
int synth_bert(const SynthSettings& options) {
    struct Shape {
        uint32_t n_embd = 128, n_layer = 2, n_head = 4, n_ff = 512, n_ctx_train = 512, n_token_types = 2;
    } const shape;
    if (options.preset != "tiny") fail("unknown --preset '{}' for bert; presets: tiny", options.preset);
    if (options.experts) fail("--experts: mixture-of-experts layers are for --arch llama");
    const WeightType& type = find_weight_type(options.type);
    if (shape.n_embd % gguf::block_size(type.type) != 0)
        fail("--type {} needs n_embd to be a multiple of {}; bert tiny has {}", type.name, gguf::block_size(type.type),
             shape.n_embd);
    const std::string pooling = options.pooling.empty() ? "mean" : options.pooling;
    const uint32_t pooling_type = pooling == "mean" ? 1 : pooling == "cls" ? 2 : pooling == "last" ? 3 : 0;
    if (pooling_type == 0) fail("--pooling must be mean, cls or last, not '{}'", pooling);
    const gguf::File vocab = gguf::File::open(options.vocab);
    if (vocab.get_string("tokenizer.ggml.model") != "bert")
        fail("{}: bert takes a WordPiece vocabulary (tokenizer.ggml.model 'bert'), such as llama.cpp's "
             "ggml-vocab-bert-bge.gguf; give one with --vocab", vocab.name());
    const uint64_t n_vocab = vocab.get_string_array("tokenizer.ggml.tokens")->size();

    ModelWriter model(type, options.seed);
    gguf::Writer& w = model.writer();
    w.add_string("general.architecture", "bert");
    w.add_string("general.name", fmt::format("vkllm-synth-bert-tiny-{}-{}", pooling, type.name));
    w.add_u32("general.file_type", type.file_type);
    w.add_u32("general.quantization_version", 2);
    w.add_u32("bert.context_length", shape.n_ctx_train);
    w.add_u32("bert.embedding_length", shape.n_embd);
    w.add_u32("bert.block_count", shape.n_layer);
    w.add_u32("bert.feed_forward_length", shape.n_ff);
    w.add_u32("bert.attention.head_count", shape.n_head);
    w.add_f32("bert.attention.layer_norm_epsilon", 1e-12f);
    w.add_bool("bert.attention.causal", false);
    w.add_u32("bert.pooling_type", pooling_type);
    for (const gguf::KeyValue& kv : vocab.metadata())
        if (kv.key.starts_with("tokenizer.ggml.") && kv.key != "tokenizer.ggml.token_type_count") w.add_value(kv.key, kv.value);
    w.add_u32("tokenizer.ggml.token_type_count", shape.n_token_types);

    const uint64_t n_embd = shape.n_embd;
    model.add_matrix("token_embd.weight", n_embd, n_vocab);
    model.add_matrix("token_types.weight", n_embd, shape.n_token_types, 0, gguf::GgmlType::F32);
    model.add_matrix("position_embd.weight", n_embd, shape.n_ctx_train);
    model.add_norm("token_embd_norm.weight", n_embd);
    model.add_bias("token_embd_norm.bias", n_embd);
    for (uint32_t il = 0; il < shape.n_layer; ++il) {
        const std::string blk = fmt::format("blk.{}.", il);
        for (const char* projection : {"attn_q", "attn_k", "attn_v", "attn_output"}) {
            model.add_matrix(blk + projection + ".weight", n_embd, n_embd);
            model.add_bias(blk + projection + ".bias", n_embd);
        }
        model.add_norm(blk + "attn_output_norm.weight", n_embd);
        model.add_bias(blk + "attn_output_norm.bias", n_embd);
        model.add_matrix(blk + "ffn_up.weight", n_embd, shape.n_ff);
        model.add_bias(blk + "ffn_up.bias", shape.n_ff);
        model.add_matrix(blk + "ffn_down.weight", shape.n_ff, n_embd);
        model.add_bias(blk + "ffn_down.bias", n_embd);
        model.add_norm(blk + "layer_output_norm.weight", n_embd);
        model.add_bias(blk + "layer_output_norm.bias", n_embd);
    }
    model.writer().write(options.out);
    std::printf("%s: bert tiny in %.*s, %s pooling, %.1f MiB of tensors, seed %llu\n", options.out.c_str(),
                int(type.name.size()), type.name.data(), pooling.c_str(), double(model.tensor_bytes()) / (1 << 20),
                (unsigned long long)options.seed);
    return 0;
}

}  // namespace

int synth(Args args) {
    const std::optional<SynthSettings> parsed = parse_settings(args);
    if (!parsed) return 0;
    const SynthSettings& options = *parsed;
    if (options.arch == "minimax-m3") return synth_minimax_m3(options);
    if (options.arch == "bert") return synth_bert(options);
    if (!options.pooling.empty()) fail("--pooling is for --arch bert");
    if (options.dense) fail("--dense is for --arch minimax-m3");
    const Preset& preset = find_preset(options.arch, options.preset);
    if (preset.gemma() && options.experts > 0) fail("--experts: mixture-of-experts layers are for --arch llama");
    const WeightType& type = find_weight_type(options.type);
    const gguf::File vocab = gguf::File::open(options.vocab);
    const auto tokens = vocab.get_string_array("tokenizer.ggml.tokens");
    if (!tokens) fail("{}: no tokenizer.ggml.tokens to take the vocabulary from", vocab.name());
    const uint64_t n_vocab = tokens->size();
    check_fits(type, preset, n_vocab, options.experts);

    ModelWriter model(type, options.seed);
    add_metadata(model.writer(), preset, type, options, vocab);
    const uint64_t head_dim = preset.head_size(), n_embd_q = head_dim * preset.n_head;
    const uint64_t n_embd_kv = head_dim * preset.n_head_kv;
    model.add_matrix("token_embd.weight", preset.n_embd, n_vocab);
    model.add_norm("output_norm.weight", preset.n_embd);
    if (!preset.gemma()) model.add_matrix("output.weight", preset.n_embd, n_vocab);
    for (uint32_t il = 0; il < preset.n_layer; ++il) {
        const std::string blk = fmt::format("blk.{}.", il);
        model.add_norm(blk + "attn_norm.weight", preset.n_embd);
        model.add_matrix(blk + "attn_q.weight", preset.n_embd, n_embd_q);
        model.add_matrix(blk + "attn_k.weight", preset.n_embd, n_embd_kv);
        model.add_matrix(blk + "attn_v.weight", preset.n_embd, n_embd_kv);
        model.add_matrix(blk + "attn_output.weight", n_embd_q, preset.n_embd);
        model.add_norm(blk + "ffn_norm.weight", preset.n_embd);
        if (preset.gemma()) {  // per-head QK norms and the norms after attention and FFN
            model.add_norm(blk + "attn_q_norm.weight", head_dim);
            model.add_norm(blk + "attn_k_norm.weight", head_dim);
            model.add_norm(blk + "post_attention_norm.weight", preset.n_embd);
            model.add_norm(blk + "post_ffw_norm.weight", preset.n_embd);
        }
        if (options.experts == 0) {
            model.add_matrix(blk + "ffn_gate.weight", preset.n_embd, preset.n_ff);
            model.add_matrix(blk + "ffn_up.weight", preset.n_embd, preset.n_ff);
            model.add_matrix(blk + "ffn_down.weight", preset.n_ff, preset.n_embd);
            continue;
        }
        // The router stays F32, as llama.cpp's quantizer leaves ffn_gate_inp.
        model.add_matrix(blk + "ffn_gate_inp.weight", preset.n_embd, options.experts, 0, gguf::GgmlType::F32);
        model.add_matrix(blk + "ffn_gate_exps.weight", preset.n_embd, preset.n_ff, options.experts);
        model.add_matrix(blk + "ffn_up_exps.weight", preset.n_embd, preset.n_ff, options.experts);
        model.add_matrix(blk + "ffn_down_exps.weight", preset.n_ff, preset.n_embd, options.experts);
    }
    model.writer().write(options.out);
    std::printf("%.*s: %.*s %.*s in %.*s, %.1f MiB of tensors, seed %llu\n", int(options.out.size()),
                options.out.data(), int(preset.arch.size()), preset.arch.data(), int(preset.name.size()),
                preset.name.data(), int(type.name.size()),
                type.name.data(), double(model.tensor_bytes()) / (1 << 20), (unsigned long long)options.seed);
    return 0;
}

}  // namespace vkllm::cli
