// Mistral Small 4 conversion on a tiny checkpoint written here: DeepSeek-V2 keys, the MLA kv_b
// split into attn_k_b (per head, transposed) and attn_v_b, stacked experts kept as they are.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "convert/convert.h"
#include "core/error.h"
#include "gguf/quants.h"
#include "gguf/reader.h"
#include "safetensors_writer.h"
#include "test_main.h"

using namespace vkllm;

namespace {

constexpr uint64_t n_embd = 128, n_ff = 256, n_ff_exp = 64, n_head = 4, q_lora = 32, kv_lora = 32, nope = 32,
                   rope = 16, v_head = 32, n_expert = 8, n_vocab = 2048;

struct Checkpoint {
    std::filesystem::path dir;
    std::vector<float> kv_b;  // layer 1's kv_b_proj as stored (bf16-rounded)
};

Checkpoint write_checkpoint(const std::filesystem::path& tekken) {
    const auto dir = std::filesystem::temp_directory_path() / "vkllm_test_mistral4_hf";
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    std::filesystem::copy_file(tekken, dir / "tekken.json");
    std::ofstream(dir / "config.json") << fmt::format(R"({{"architectures": ["Mistral3ForConditionalGeneration"],
  "text_config": {{"model_type": "mistral4", "hidden_size": {}, "intermediate_size": {}, "moe_intermediate_size": {},
    "num_hidden_layers": 2, "first_k_dense_replace": 1, "num_attention_heads": {}, "num_key_value_heads": {},
    "q_lora_rank": {}, "kv_lora_rank": {}, "qk_nope_head_dim": {}, "qk_rope_head_dim": {}, "v_head_dim": {},
    "n_routed_experts": {}, "num_experts_per_tok": 2, "n_shared_experts": 1, "norm_topk_prob": true,
    "routed_scaling_factor": 1.0, "rms_norm_eps": 1e-6, "max_position_embeddings": 4096, "vocab_size": {},
    "rope_parameters": {{"rope_type": "yarn", "factor": 16.0, "original_max_position_embeddings": 256,
      "beta_fast": 32.0, "beta_slow": 1.0, "mscale": 1.0, "mscale_all_dim": 1.0, "rope_theta": 10000.0}}}}}})",
                                                      n_embd, n_ff, n_ff_exp, n_head, n_head, q_lora, kv_lora, nope,
                                                      rope, v_head, n_expert, n_vocab);
    std::mt19937 rng(99);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    Checkpoint checkpoint{dir, {}};
    std::vector<test::StTensor> tensors;
    const auto add = [&](const std::string& name, std::vector<uint64_t> shape, float scale, float offset = 0) {
        uint64_t n = 1;
        for (uint64_t d : shape) n *= d;
        std::vector<float> values(n);
        for (float& v : values) v = gguf::bf16_to_fp32(gguf::fp32_to_bf16(offset + scale * normal(rng)));
        tensors.push_back(test::bf16_tensor(name, std::move(shape), values));
        return values;
    };
    add("language_model.model.embed_tokens.weight", {n_vocab, n_embd}, 1.0f);
    add("language_model.lm_head.weight", {n_vocab, n_embd}, 0.1f);
    add("language_model.model.norm.weight", {n_embd}, 0.1f, 1.0f);
    for (int il = 0; il < 2; ++il) {
        const std::string p = fmt::format("language_model.model.layers.{}.", il);
        add(p + "input_layernorm.weight", {n_embd}, 0.1f, 1.0f);
        add(p + "post_attention_layernorm.weight", {n_embd}, 0.1f, 1.0f);
        add(p + "self_attn.q_a_proj.weight", {q_lora, n_embd}, 0.1f);
        add(p + "self_attn.q_a_layernorm.weight", {q_lora}, 0.1f, 1.0f);
        add(p + "self_attn.q_b_proj.weight", {n_head * (nope + rope), q_lora}, 0.2f);
        add(p + "self_attn.kv_a_proj_with_mqa.weight", {kv_lora + rope, n_embd}, 0.1f);
        add(p + "self_attn.kv_a_layernorm.weight", {kv_lora}, 0.1f, 1.0f);
        checkpoint.kv_b = add(p + "self_attn.kv_b_proj.weight", {n_head * (nope + v_head), kv_lora}, 0.2f);
        add(p + "self_attn.o_proj.weight", {n_embd, n_head * v_head}, 0.05f);
        if (il == 0) {
            add(p + "mlp.gate_proj.weight", {n_ff, n_embd}, 0.1f);
            add(p + "mlp.up_proj.weight", {n_ff, n_embd}, 0.1f);
            add(p + "mlp.down_proj.weight", {n_embd, n_ff}, 0.05f);
        } else {
            add(p + "mlp.gate.weight", {n_expert, n_embd}, 0.1f);
            add(p + "mlp.experts.gate_up_proj", {n_expert, 2 * n_ff_exp, n_embd}, 0.1f);
            add(p + "mlp.experts.down_proj", {n_expert, n_embd, n_ff_exp}, 0.1f);
            add(p + "mlp.shared_experts.gate_proj.weight", {n_ff_exp, n_embd}, 0.1f);
            add(p + "mlp.shared_experts.up_proj.weight", {n_ff_exp, n_embd}, 0.1f);
            add(p + "mlp.shared_experts.down_proj.weight", {n_embd, n_ff_exp}, 0.1f);
        }
    }
    test::write_file(dir / "model.safetensors", test::safetensors_bytes(tensors));
    return checkpoint;
}

}  // namespace

TEST_CASE("Mistral Small 4: DeepSeek-V2 keys, kv_b split into attn_k_b and attn_v_b, experts stacked") {
    const auto tekken_file = test::shared_path("fixtures/convert/mistral3_hf/hf/tekken.json");  // the tokenizer
    if (!tekken_file) return;
    const std::filesystem::path& tekken = *tekken_file;
    const Checkpoint checkpoint = write_checkpoint(tekken);
    const auto output = std::filesystem::temp_directory_path() / "vkllm_test_mistral4.gguf";
    convert::convert({.hf_dir = checkpoint.dir, .output = output, .type = convert::OutputType::F32});
    const gguf::File file = gguf::File::open(output);

    CHECK(file.get_string("general.architecture") == "mistral4");
    CHECK(file.get_u32("mistral4.attention.head_count_kv") == 1u);
    CHECK(file.get_u32("mistral4.attention.key_length") == kv_lora + rope);
    CHECK(file.get_u32("mistral4.attention.value_length") == kv_lora);
    CHECK(file.get_u32("mistral4.attention.key_length_mla") == nope + rope);
    CHECK(file.get_u32("mistral4.attention.value_length_mla") == v_head);
    CHECK(file.get_u32("mistral4.leading_dense_block_count") == 1u);
    CHECK(file.get_u32("mistral4.expert_gating_func") == 1u);
    CHECK(file.get_f32("mistral4.rope.scaling.yarn_log_multiplier") == 0.1f);
    CHECK(file.get_string("tokenizer.ggml.pre") == "tekken");

    const gguf::Tensor& k_b = file.tensor("blk.1.attn_k_b.weight");
    const gguf::Tensor& v_b = file.tensor("blk.1.attn_v_b.weight");
    CHECK(k_b.ne == std::array<uint64_t, 4>{nope, kv_lora, n_head, 1});
    CHECK(v_b.ne == std::array<uint64_t, 4>{kv_lora, v_head, n_head, 1});
    const std::vector<float> k = gguf::dequantize(k_b), v = gguf::dequantize(v_b);
    const auto kv_b = [&](uint64_t row, uint64_t col) { return checkpoint.kv_b[row * kv_lora + col]; };
    bool k_ok = true, v_ok = true;
    for (uint64_t h = 0; h < n_head; ++h)
        for (uint64_t r = 0; r < kv_lora; ++r) {
            for (uint64_t d = 0; d < nope; ++d)
                k_ok &= k[(h * kv_lora + r) * nope + d] == kv_b(h * (nope + v_head) + d, r);
            for (uint64_t i = 0; i < v_head; ++i)
                v_ok &= v[(h * v_head + i) * kv_lora + r] == kv_b(h * (nope + v_head) + nope + i, r);
        }
    CHECK(k_ok);
    CHECK(v_ok);
    CHECK(file.tensor("blk.1.ffn_gate_up_exps.weight").ne == std::array<uint64_t, 4>{n_embd, 2 * n_ff_exp, n_expert, 1});
    CHECK(file.tensor("blk.1.ffn_down_exps.weight").ne == std::array<uint64_t, 4>{n_ff_exp, n_embd, n_expert, 1});
    CHECK(file.tensor("blk.0.ffn_down.weight").ne == std::array<uint64_t, 4>{n_ff, n_embd, 1, 1});
    CHECK(file.find_tensor("blk.1.attn_kv_b.weight") == nullptr);
    std::filesystem::remove(output);
    std::filesystem::remove_all(checkpoint.dir);
}
