// vkllm synth: a GGUF of a real model's shape with seeded random weights, for speed work and
// loader tests without downloading a model. The vocabulary (and so the tokenizer) is the bundled
// stories260K's 512-token SPM one, built into vkllm, so every preset is small in its embedding and
// output matrices; --vocab takes another GGUF's. The file is written one tensor at a time, each
// generated and quantized on every core.
#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <numeric>
#include <optional>
#include <span>
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

// models/stories260K.gguf, built in (cmake/Embed.cmake).
extern "C" const unsigned char vkllm_embedded_stories260K_gguf[], vkllm_embedded_stories260K_gguf_end[];

namespace vkllm::cli {

namespace {

using WeightType = gguf::WeightTypeInfo;  // gguf/weight_types.def

constexpr std::string_view about =
    "A GGUF of a real model's shape with seeded random weights, for speed work and loader tests.\n"
    "  llama presets: tiny (n_embd 128, 3 layers, 4 heads, 2 kv heads, n_ff 256: the shared llama fixture's shape),\n"
    "           1b (Llama-3.2-1B's shape: n_embd 2048, 16 layers, 32 heads, 8 kv heads, n_ff 8192, context 4096),\n"
    "           3b (Llama-3.2-3B's: n_embd 3072, 28 layers, 24 heads and 8 kv heads of 128, n_ff 8192),\n"
    "           8b (Llama-3.1-8B's: n_embd 4096, 32 layers, 32 heads and 8 kv heads of 128, n_ff 14336)\n"
    "  gemma3 presets: 1b (Gemma-3-1B's shape: n_embd 1152, 26 layers, 4 heads and 1 kv head of 256, n_ff 6912,\n"
    "           5 of every 6 layers on a 512-token sliding window, tied output, context 32768)\n"
    "  minimax-m3 (no preset; --type f32, f16 or q8_0): MiniMax-M3's attention and indexer dims (64 heads and 4 KV\n"
    "           heads of 128, 4 index heads, top 16 blocks of 128), n_embd 1024, 3 layers (1 dense), 4 small experts\n"
    "  bert presets: tiny (n_embd 128, 2 layers, 4 heads, n_ff 512, 512 positions, biases and LayerNorms: an\n"
    "           encoder of all-MiniLM's form; --vocab a WordPiece vocabulary such as llama.cpp's ggml-vocab-bert-bge.gguf)\n"
    "  types: f32 f16 bf16 q4_0 q4_1 q5_0 q5_1 q8_0 q4_k q5_k q6_k (K-quants need rows of whole 256-value blocks:\n"
    "           the llama 1b, 3b and 8b presets take them)\n"
    "  Every preset takes the bundled 512-token SPM vocabulary (stories260K's, built into vkllm), so the presets\n"
    "  have the real models' layers but not their 128256- or 262144-token embeddings; --vocab FILE takes the\n"
    "  tokenizer of another GGUF (a vocab-only one will do) and sizes token_embd and output to it.";

struct Preset {
    std::string_view arch, name;
    uint32_t n_embd, n_layer, n_head, n_head_kv, n_ff, n_ctx_train;
    float rope_freq_base;
    uint32_t head_dim = 0;  // 0: n_embd / n_head
    uint32_t n_swa = 0;     // gemma3: the local layers' sliding window

    uint32_t head_size() const { return head_dim ? head_dim : n_embd / n_head; }
    bool gemma() const { return arch == "gemma3"; }
};

constexpr std::array<Preset, 5> presets = {{
    {"llama", "tiny", 128, 3, 4, 2, 256, 2048, 10000.0f},
    {"llama", "1b", 2048, 16, 32, 8, 8192, 4096, 500000.0f},
    {"llama", "3b", 3072, 28, 24, 8, 8192, 4096, 500000.0f},
    {"llama", "8b", 4096, 32, 32, 8, 14336, 4096, 500000.0f},
    {"gemma3", "1b", 1152, 26, 4, 1, 6912, 32768, 1000000.0f, 256, 512},
}};

// The command line, or nothing when --help was asked.
std::optional<SynthSettings> parse_settings(Args args) {
    SynthSettings settings;
    Options parser("synth", "--arch llama|gemma3|minimax-m3|bert [--preset NAME] [--type TYPE] -o FILE [options]", about);
    parser.add("--arch", settings.arch, "ARCH", "llama, gemma3, minimax-m3 or bert").required()
        .add("--preset", settings.preset, "NAME", "the shape: tiny, 1b, 3b or 8b (llama), 1b (gemma3), tiny (bert)")
        .add("--type", settings.type, "TYPE", "the matrices' type (f16 for minimax-m3 when not given)")
        .add("-o,--output", settings.out, "FILE", "the GGUF to write").required()
        .add("--seed", settings.seed, "S", "the weights' seed")
        .add("--vocab", settings.vocab, "FILE", "the GGUF whose vocabulary (tokenizer.* keys) the model takes; "
                                                "none: the bundled stories260K's")
        .add("--pooling", settings.pooling, "mean|cls|last", "bert: the pooling_type the file asks for (mean when not given)")
        .add("--threads", settings.threads, "N", "threads generating the weights; 0: every core (the file is the same "
                                                 "for any number)")
        .add("--experts", settings.experts, "N", "llama: Mixtral-style layers of N experts of n_ff each; 0: dense")
        .add("--experts-used", settings.experts_used, "K", "llama: experts used per token")
        .flag("--dense", settings.dense, "minimax-m3: no indexer, dense attention in every layer");
    if (!parser.parse(args)) return std::nullopt;
    if (settings.arch != "minimax-m3" && (settings.preset.empty() || settings.type.empty()))
        fail("--arch {} needs --preset and --type; see 'vkllm synth --help'", settings.arch);
    if (settings.threads > 1024) fail("--threads {}: give 0 (every core) up to 1024", settings.threads);
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
    std::string names;
    for (const Preset& preset : presets) {
        if (preset.arch != arch) continue;
        if (preset.name == name) return preset;
        names += fmt::format("{}{}", names.empty() ? "" : ", ", preset.name);
    }
    fail("unknown --preset '{}' for {}; presets: {}", name, arch, names);
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
// Its state after n draws is the seed plus n steps, so any stretch of a stream can be drawn alone.
class Random {
public:
    explicit Random(uint64_t seed) : state_(seed) {}
    uint64_t next() {
        uint64_t z = (state_ += step);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }
    float uniform() { return float(next() >> 40) * 0x1.0p-24f * 2.0f - 1.0f; }  // [-1, 1)
    void skip(uint64_t draws) { state_ += draws * step; }

private:
    static constexpr uint64_t step = 0x9e3779b97f4a7c15ull;
    uint64_t state_;
};

// Each tensor's values come from the seed and its name alone, so they don't depend on tensor order.
uint64_t tensor_seed(uint64_t seed, std::string_view name) {
    uint64_t hash = 0xcbf29ce484222325ull;  // FNV-1a
    for (char c : name) hash = (hash ^ uint8_t(c)) * 0x100000001b3ull;
    return Random(seed ^ hash).next();
}

// A tensor to write: values[i] = center + spread * (draw i of the tensor's stream), rows quantized to `type`.
struct TensorPlan {
    std::string name;
    gguf::GgmlType type;
    std::vector<uint64_t> ne;
    float center, spread;

    uint64_t n_rows() const { return std::accumulate(ne.begin() + 1, ne.end(), uint64_t(1), std::multiplies()); }
    uint64_t nbytes() const { return gguf::row_bytes(type, ne[0]) * n_rows(); }
};

// Threads over row ranges: each draws its rows' stretch of the stream (Random::skip) and quantizes
// them, rows quantize independently, so the bytes are the same for any number of threads. The K-quant
// reference quantizers search scales per block, the slowest part of a quantized file.
std::vector<std::byte> generate(const TensorPlan& tensor, uint64_t seed, uint32_t n_threads) {
    const uint64_t cols = tensor.ne[0], n_rows = tensor.n_rows(), bytes_per_row = gguf::row_bytes(tensor.type, cols);
    std::vector<std::byte> data(tensor.nbytes());
    const uint64_t rows_per_thread = (n_rows + n_threads - 1) / n_threads;
    const uint64_t rows_per_batch = std::max<uint64_t>(1, (uint64_t(1) << 16) / cols);  // 256 KiB of floats
    std::vector<std::jthread> threads;
    for (uint64_t first = 0; first < n_rows; first += rows_per_thread) {
        threads.emplace_back([&, first, end = std::min(n_rows, first + rows_per_thread)] {
            Random random(tensor_seed(seed, tensor.name));
            random.skip(first * cols);
            std::vector<float> values;
            for (uint64_t row = first; row < end; row += rows_per_batch) {
                const uint64_t count = std::min(rows_per_batch, end - row);
                values.resize(count * cols);
                for (float& v : values) v = tensor.center + tensor.spread * random.uniform();
                gguf::quantize(tensor.type, values, std::span(data).subspan(row * bytes_per_row, count * bytes_per_row));
            }
        });
    }
    threads.clear();  // joins them
    return data;
}

class ModelWriter {
public:
    ModelWriter(const WeightType& type, uint64_t seed) : type_(type), seed_(seed) {}

    // A norm weight: F32 values near 1, as trained RMSNorm scales are.
    void add_norm(const std::string& name, uint64_t n) { add({name, gguf::GgmlType::F32, {n}, 1.0f, 0.1f}); }

    // A matrix of `rows` outputs by `cols` inputs, uniform with standard deviation 1/sqrt(cols),
    // so each output of a matvec keeps about the scale of its input.
    // With `experts`, a stack of that many such matrices {cols, rows, experts} (ffn_*_exps).
    void add_matrix(const std::string& name, uint64_t cols, uint64_t rows, uint64_t experts = 0,
                    std::optional<gguf::GgmlType> type = std::nullopt) {
        std::vector<uint64_t> ne = {cols, rows};
        if (experts > 0) ne.push_back(experts);
        add({name, type.value_or(type_.type), std::move(ne), 0.0f, std::sqrt(3.0f / float(cols))});
    }

    // A bias: F32 values around 0, a tenth of a norm's spread.
    void add_bias(const std::string& name, uint64_t n) { add({name, gguf::GgmlType::F32, {n}, 0.0f, 0.1f}); }

    gguf::Writer& writer() { return writer_; }
    uint64_t tensor_bytes() const { return tensor_bytes_; }

    // Writes the file with one tensor in memory at a time, refusing first when the disk cannot hold it.
    void write(const std::filesystem::path& path, uint32_t n_threads) const {
        const std::filesystem::path folder = std::filesystem::absolute(path).parent_path();
        std::error_code error;
        const std::filesystem::space_info space = std::filesystem::space(folder, error);
        if (!error && space.available < tensor_bytes_)
            fail("{}: the file needs {} MiB and {} has {} MiB free", path.string(), tensor_bytes_ >> 20, folder.string(),
                 space.available >> 20);
        writer_.write_streaming(path, [&](size_t index, const gguf::Writer::TensorSink& sink) {
            sink(generate(plan_[index], seed_, n_threads));
        });
    }

private:
    void add(TensorPlan tensor) {
        writer_.declare_tensor(tensor.name, tensor.type, tensor.ne);
        tensor_bytes_ += tensor.nbytes();
        plan_.push_back(std::move(tensor));
    }

    const WeightType& type_;
    uint64_t seed_;
    gguf::Writer writer_;
    std::vector<TensorPlan> plan_;  // in the writer's order
    uint64_t tensor_bytes_ = 0;
};

// Every matrix row is n_embd, n_ff or the query heads' n_head * head_dim wide: whole blocks of the type.
void check_fits(const WeightType& type, const Preset& preset) {
    const uint32_t block = gguf::block_size(type.type);
    const uint32_t q_width = preset.n_head * preset.head_size();
    if (preset.n_embd % block != 0 || preset.n_ff % block != 0 || q_width % block != 0)
        fail("--type {} needs n_embd, n_ff and n_head * head_dim to be multiples of {}, but preset '{}' has {}, {} and "
             "{}; use q8_0 or another preset", type.name, block, preset.name, preset.n_embd, preset.n_ff, q_width);
}

void add_metadata(gguf::Writer& w, const Preset& p, const WeightType& type, const SynthSettings& options,
                  const SynthVocab& vocab) {
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
    vocab.add_to(w);
}

gguf::File bundled_vocab() {
    const std::span<const std::byte> bytes =
        std::as_bytes(std::span(vkllm_embedded_stories260K_gguf, vkllm_embedded_stories260K_gguf_end));
    return gguf::File::from_bytes({bytes.begin(), bytes.end()}, "the bundled stories260K.gguf");
}

uint32_t n_threads(const SynthSettings& options) {
    return options.threads ? options.threads : std::max(1u, std::thread::hardware_concurrency());
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
    model.write(options.out, n_threads(options));
    std::printf("%s: bert tiny in %.*s, %s pooling, %.1f MiB of tensors, seed %llu\n", options.out.c_str(),
                int(type.name.size()), type.name.data(), pooling.c_str(), double(model.tensor_bytes()) / (1 << 20),
                (unsigned long long)options.seed);
    return 0;
}

}  // namespace

SynthVocab::SynthVocab(const std::string& path) : file_(path.empty() ? bundled_vocab() : gguf::File::open(path)) {
    const auto tokens = file_.get_string_array("tokenizer.ggml.tokens");
    if (!tokens) fail("{}: no tokenizer.ggml.tokens to take the vocabulary from", file_.name());
    n_tokens_ = tokens->size();
}

void SynthVocab::add_to(gguf::Writer& writer) const {
    for (const gguf::KeyValue& kv : file_.metadata())
        if (kv.key.starts_with("tokenizer.")) writer.add_value(kv.key, kv.value);
}

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
    check_fits(type, preset);
    const SynthVocab vocab(options.vocab);
    const uint64_t n_vocab = vocab.n_tokens();

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
    model.write(options.out, n_threads(options));
    std::printf("%.*s: %.*s %.*s in %.*s, %.1f MiB of tensors, seed %llu\n", int(options.out.size()),
                options.out.data(), int(preset.arch.size()), preset.arch.data(), int(preset.name.size()),
                preset.name.data(), int(type.name.size()),
                type.name.data(), double(model.tensor_bytes()) / (1 << 20), (unsigned long long)options.seed);
    return 0;
}

}  // namespace vkllm::cli
