// Quantized output: Q8_0/Q4_0 blocks exactly as ggml's reference quantizers make them from the F32
// conversion, llama.cpp's per-tensor type rules, `vkllm quantize` equal to quantizing at conversion,
// and K-quant logits within the quantized criteria of the F32 conversion's, on a tiny Mistral 3
// checkpoint with 256-multiple rows written here.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "../model/fixture_check.h"
#include "convert/convert.h"
#include "convert/quantize.h"
#include "gguf/quants.h"
#include "gguf/reader.h"
#include "gpu_fixture.h"
#include "model/session.h"
#include "safetensors_writer.h"
#include "test_main.h"

using namespace vkllm;

namespace {

constexpr uint64_t n_embd = 256, n_ff = 512, n_head = 4, n_head_kv = 2, head_dim = 64, n_layer = 4, n_vocab = 2048;

// Seeded Gaussian weights scaled by 1/sqrt(fan_in), so activations stay near unit size.
std::vector<float> gaussian(std::mt19937& rng, uint64_t rows, uint64_t cols, float scale) {
    std::normal_distribution<float> normal(0.0f, scale);
    std::vector<float> values(rows * cols);
    for (float& v : values) v = normal(rng);
    return values;
}

// A Mistral 3 text checkpoint (no vision tower) with the fixture's tekken.json.
std::filesystem::path write_checkpoint(const std::filesystem::path& tekken) {
    const auto dir = std::filesystem::temp_directory_path() / "vkllm_test_quantize_hf";
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    std::filesystem::copy_file(tekken, dir / "tekken.json");
    std::ofstream(dir / "config.json") << fmt::format(R"({{"architectures": ["Mistral3ForConditionalGeneration"],
  "text_config": {{"hidden_size": {}, "intermediate_size": {}, "num_hidden_layers": {}, "num_attention_heads": {},
    "num_key_value_heads": {}, "head_dim": {}, "max_position_embeddings": 4096, "rms_norm_eps": 1e-5,
    "vocab_size": {}, "rope_parameters": {{"rope_type": "default", "rope_theta": 1000000.0}}}}}})",
                                                      n_embd, n_ff, n_layer, n_head, n_head_kv, head_dim, n_vocab);
    std::mt19937 rng(1234);
    float scale = 1.0f;
    const auto matrix = [&](std::string name, uint64_t rows, uint64_t cols) {
        return test::bf16_tensor(std::move(name), {rows, cols}, gaussian(rng, rows, cols, scale / std::sqrt(float(cols))));
    };
    const auto norm = [&](std::string name) {
        std::vector<float> values = gaussian(rng, 1, n_embd, 0.1f);
        for (float& v : values) v += 1.0f;
        return test::bf16_tensor(std::move(name), {n_embd}, values);
    };
    std::vector<test::StTensor> tensors;
    tensors.push_back(test::bf16_tensor("language_model.model.embed_tokens.weight", {n_vocab, n_embd},
                                        gaussian(rng, n_vocab, n_embd, 1.0f)));
    tensors.push_back(matrix("language_model.lm_head.weight", n_vocab, n_embd));
    tensors.push_back(norm("language_model.model.norm.weight"));
    scale = 0.25f;  // each layer nudges the residual, as in a trained model, rather than replacing it
    for (uint64_t il = 0; il < n_layer; ++il) {
        const std::string layer = fmt::format("language_model.model.layers.{}.", il);
        tensors.push_back(norm(layer + "input_layernorm.weight"));
        tensors.push_back(norm(layer + "post_attention_layernorm.weight"));
        tensors.push_back(matrix(layer + "self_attn.q_proj.weight", n_head * head_dim, n_embd));
        tensors.push_back(matrix(layer + "self_attn.k_proj.weight", n_head_kv * head_dim, n_embd));
        tensors.push_back(matrix(layer + "self_attn.v_proj.weight", n_head_kv * head_dim, n_embd));
        tensors.push_back(matrix(layer + "self_attn.o_proj.weight", n_embd, n_head * head_dim));
        tensors.push_back(matrix(layer + "mlp.gate_proj.weight", n_ff, n_embd));
        tensors.push_back(matrix(layer + "mlp.up_proj.weight", n_ff, n_embd));
        tensors.push_back(matrix(layer + "mlp.down_proj.weight", n_embd, n_ff));
    }
    test::write_file(dir / "model.safetensors", test::safetensors_bytes(tensors));
    return dir;
}


std::filesystem::path converted(const std::filesystem::path& hf, convert::OutputType type) {
    const auto path = std::filesystem::temp_directory_path() /
                      fmt::format("vkllm_test_quantize_{}.gguf", convert::output_type_name(type));
    convert::convert({.hf_dir = hf, .output = path, .type = type});
    return path;
}

std::vector<float> logits_of(const std::filesystem::path& path, const std::vector<int32_t>& tokens) {
    gguf::File file = gguf::File::open(path);
    auto model = model::load_model(test::device(), file);
    model::Session session(test::device(), *model, {.n_ctx = uint32_t(tokens.size())});
    std::vector<float> logits;
    session.eval(tokens, &logits);
    return logits;
}

std::vector<std::byte> file_bytes(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return std::vector<std::byte>(reinterpret_cast<std::byte*>(bytes.data()),
                                  reinterpret_cast<std::byte*>(bytes.data()) + bytes.size());
}

}  // namespace

TEST_CASE("quantized conversion: ggml's blocks, llama.cpp's type rules, and logits near the F32 conversion's") {
    const auto tekken = test::shared_path("fixtures/convert/mistral3_hf/hf/tekken.json");  // the tokenizer
    if (!tekken) return;
    const auto hf = write_checkpoint(*tekken);
    const auto f32_path = converted(hf, convert::OutputType::F32);
    const gguf::File f32 = gguf::File::open(f32_path);

    // Q8_0 and Q4_0 blocks are ggml's reference quantization of the F32 conversion.
    for (auto type : {convert::OutputType::Q8_0, convert::OutputType::Q4_0}) {
        const auto path = converted(hf, type);
        const gguf::File file = gguf::File::open(path);
        CAPTURE(std::string(convert::output_type_name(type)));
        const gguf::GgmlType matrices = type == convert::OutputType::Q8_0 ? gguf::GgmlType::Q8_0 : gguf::GgmlType::Q4_0;
        for (const gguf::Tensor& t : file.tensors()) {
            CAPTURE(std::string(t.name));
            const std::vector<std::byte> expected = gguf::quantize(t.type, gguf::dequantize(f32.tensor(t.name)));
            CHECK(std::equal(t.data.begin(), t.data.end(), expected.begin(), expected.end()));
            if (t.n_dims == 1) CHECK(t.type == gguf::GgmlType::F32);
            else if (t.name == "output.weight") CHECK(t.type == (matrices == gguf::GgmlType::Q8_0 ? matrices : gguf::GgmlType::Q6_K));
            else CHECK(t.type == matrices);
        }
        std::filesystem::remove(path);
    }

    // vkllm quantize of the F32 file equals quantizing at conversion, byte for byte; Q4_K_M's mix.
    const auto q4_k = converted(hf, convert::OutputType::Q4_K);
    const auto requantized = std::filesystem::temp_directory_path() / "vkllm_test_requantized.gguf";
    convert::quantize_file(f32_path, requantized, convert::OutputType::Q4_K, {});
    CHECK(file_bytes(q4_k) == file_bytes(requantized));
    std::filesystem::remove(requantized);
    {
        // Q6_K for the output and for attn_v / ffn_down of layers 2 and 3 of 4 (llama-quant.cpp use_more_bits)
        const gguf::File file = gguf::File::open(q4_k);
        CHECK(file.tensor("output.weight").type == gguf::GgmlType::Q6_K);
        CHECK(file.tensor("token_embd.weight").type == gguf::GgmlType::Q4_K);
        CHECK(file.tensor("blk.1.attn_v.weight").type == gguf::GgmlType::Q4_K);
        CHECK(file.tensor("blk.2.attn_v.weight").type == gguf::GgmlType::Q6_K);
        CHECK(file.tensor("blk.0.ffn_down.weight").type == gguf::GgmlType::Q4_K);
        CHECK(file.tensor("blk.3.ffn_down.weight").type == gguf::GgmlType::Q6_K);
        CHECK(file.tensor("blk.3.ffn_up.weight").type == gguf::GgmlType::Q4_K);
        CHECK(file.tensor("blk.2.attn_norm.weight").type == gguf::GgmlType::F32);
    }

    // K-quant conversions give logits within the quantized criteria of the F32 conversion's.
    std::mt19937 rng(7);
    std::vector<int32_t> tokens = {1};
    while (tokens.size() < 64) tokens.push_back(int32_t(1000 + rng() % (n_vocab - 1000)));
    const std::vector<float> reference = logits_of(f32_path, tokens);
    const auto q6_k = converted(hf, convert::OutputType::Q6_K);
    for (auto [type, path] : {std::pair{convert::OutputType::Q6_K, q6_k}, std::pair{convert::OutputType::Q4_K, q4_k}}) {
        CAPTURE(std::string(convert::output_type_name(type)));
        const test::LogitsComparison c = test::compare_logits(logits_of(path, tokens), reference, n_vocab);
        INFO(c.summary());
        MESSAGE(convert::output_type_name(type), ": ", c.summary());
        // 4-bit blocks of Gaussian weights are off by ~7% each and the logits inherit it: llama.cpp's
        // own Q4_K_M-vs-F32 logits of an 8-layer variant differ by 7.4% (Q6_K: 2.6%), vkllm's by 7.3% (2.5%)
        CHECK(c.median_rel_rms <= (type == convert::OutputType::Q6_K ? 2.5e-2 : 0.1));
        CHECK(c.top1_agreement >= 0.97);
        std::filesystem::remove(path);
    }
    std::filesystem::remove(f32_path);
    std::filesystem::remove_all(hf);
}
