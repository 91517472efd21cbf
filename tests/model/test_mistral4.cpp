// Mistral Small 4 and DeepSeek (absorbed MLA + MoE): the shared fixtures against llama.cpp's logits,
// chunked prefill against one chunk, the latent-only KV cache, and a deepseek2 variant of the fixture
// (sigmoid routing with an expert bias, group-limited routing, attention temperature, DeepSeek's YaRN
// mscale rule) against llama.cpp's logits stored in tests/data/deepseek2_mla.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <optional>

#include "fixture_check.h"
#include "gguf/writer.h"
#include "gpu_fixture.h"
#include "session_check.h"
#include "model/session.h"
#include "ops/attention_config.h"

using namespace vkllm;

TEST_CASE("mistral4 fixtures match llama.cpp's logits") {
    for (auto [fixture, quantized] : {std::pair{"mistral4_f32", false}, std::pair{"mistral4_q8_0", true}}) {
        const std::string name = fixture;
        auto dir = test::fixture_dir(name);
        if (dir.empty()) continue;
        CAPTURE(name);
        gguf::File file = gguf::File::open(dir / "model.gguf");
        auto model = model::load_model(test::device(), file);
        std::string detail;
        const bool passed = test::meets_fixture_criteria(test::session_logits(*model, test::read_tokens(dir / "tokens.txt")),
                                                         dir, 512, quantized, detail);
        INFO(detail);
        CHECK(passed);
    }
}

// fp32 arithmetic, so that matmul over chunks of any size and the prefill attention kernel agree to 1e-4.
// Token by token (matvec and the decode kernel) sums in another order; a latent a rounding step away
// from its neighbour then lands on the other f16 value in the cache, and every head of every later
// position reads it as key and value: up to 1.2e-4 there, so that run gets 2e-4.
TEST_CASE("mistral4: prefill in one chunk, in small chunks and token by token agree") {
    auto dir = test::fixture_dir("mistral4_f32");
    if (dir.empty()) return;
    test::Float32Kernels fp32_arithmetic;
    gguf::File file = gguf::File::open(dir / "model.gguf");
    auto model = model::load_model(test::device(), file);
    const std::vector<int32_t> tokens = test::read_tokens(dir / "tokens.txt");
    const std::vector<float> one_chunk = test::session_logits(*model, tokens);
    for (uint32_t n_ubatch : {16u, 4u, 1u}) {
        CAPTURE(n_ubatch);
        test::check_runs_agree(one_chunk, test::session_logits(*model, tokens, n_ubatch), 512,
                                std::max(n_ubatch == 1 ? 2e-4 : 0.0, test::agreement_tolerance(n_ubatch)));
    }
}

TEST_CASE("mistral4 caches one f16 row of latent and RoPE key per token and layer") {
    auto dir = test::fixture_dir("mistral4_f32");
    if (dir.empty()) return;
    gguf::File file = gguf::File::open(dir / "model.gguf");
    auto model = model::load_model(test::device(), file);
    const model::KvLayout layout = model->kv_layout();
    REQUIRE(layout.layers.size() == 3);
    for (const model::KvLayerLayout& layer : layout.layers) {
        CHECK(layer.k_row == 32 + 16);  // kv_lora_rank + qk_rope
        CHECK(layer.v_row == 0);
    }
    model::Session session(test::device(), *model, {.n_ctx = 100});
    CHECK(session.kv_bytes() == 100u * (32 + 16) * 2 * 3);
}

namespace {

// A model built in memory; also written to $VKLLM_TEST_WRITE_DIR/name when that is set, to make
// reference logits or read it with `vkllm info` (tests/data/deepseek2_mla/README.md, docs/PERFORMANCE.md).
gguf::File built(const gguf::Writer& writer, const std::string& name) {
    if (const char* dir = std::getenv("VKLLM_TEST_WRITE_DIR")) writer.write(std::filesystem::path(dir) / name);
    return gguf::File::from_bytes(writer.bytes(), name);
}

// The mistral4_f32 fixture as a deepseek2 file: keys renamed, plus DeepSeek-V3's routing (sigmoid
// scores, a selection bias, 4 groups of 2 experts of which 2 are kept, routed scale 2.5), the Llama-4
// attention temperature over 32-token floors, and mscale_all_dim 0.707 (deepseek2 then takes mscale =
// mscale_all_dim, model-notes B.4).
gguf::File deepseek2_variant(const gguf::File& mistral4) {
    gguf::Writer writer(mistral4.version());
    for (const gguf::KeyValue& kv : mistral4.metadata()) {
        if (kv.key == "general.architecture") writer.add_string(kv.key, "deepseek2");
        else if (kv.key == "mistral4.expert_gating_func") writer.add_u32("deepseek2.expert_gating_func", 2);
        else if (kv.key == "mistral4.expert_weights_scale") writer.add_f32("deepseek2.expert_weights_scale", 2.5f);
        else if (kv.key == "mistral4.rope.scaling.yarn_log_multiplier")
            writer.add_f32("deepseek2.rope.scaling.yarn_log_multiplier", 0.0707f);
        else if (kv.key.starts_with("mistral4.")) writer.add_value("deepseek2." + std::string(kv.key.substr(9)), kv.value);
        else writer.add_value(kv.key, kv.value);
    }
    writer.add_u32("deepseek2.expert_group_count", 4);
    writer.add_u32("deepseek2.expert_group_used_count", 2);
    writer.add_f32("deepseek2.attention.temperature_scale", 0.1f);
    writer.add_u32("deepseek2.attention.temperature_length", 32);
    for (const gguf::Tensor& tensor : mistral4.tensors()) {
        writer.add_tensor(tensor.name, tensor.type, std::span(tensor.ne).first(tensor.n_dims), tensor.data);
        if (!tensor.name.ends_with("ffn_gate_inp.weight")) continue;
        // The selection bias: seeded values of the order of the sigmoid scores' spread.
        std::vector<float> bias = test::random_floats(8, tensor.name.size(), -0.05f, 0.05f);
        const uint64_t ne[] = {8};
        writer.add_tensor(std::string(tensor.name.substr(0, tensor.name.find("ffn_gate_inp"))) + "exp_probs_b.bias",
                          gguf::GgmlType::F32, ne, std::as_bytes(std::span(bias)));
    }
    return built(writer, "deepseek2_mla.gguf");
}

}  // namespace

TEST_CASE("deepseek2 (sigmoid + bias, group-limited routing, temperature, YaRN mscale) matches llama.cpp") {
    auto dir = test::fixture_dir("mistral4_f32");
    if (dir.empty()) return;
    gguf::File file = deepseek2_variant(gguf::File::open(dir / "model.gguf"));
    auto model = model::load_model(test::device(), file);
    const std::vector<float> logits = test::session_logits(*model, test::read_tokens(dir / "tokens.txt"));
    const auto reference = std::filesystem::path(VKLLM_SOURCE_DIR) / "tests/data/deepseek2_mla/logits.f32";
    std::string detail;
    const bool passed = test::meets_criteria(logits, reference, 512, false, detail);
    INFO(detail);
    CHECK(passed);
    // The DeepSeek settings must move the logits far past the criteria, or this case tests nothing new.
    test::LogitsComparison as_mistral4 = test::compare_logits(logits, test::read_f32(dir / "logits.f32"), 512);
    CAPTURE(as_mistral4.summary());
    CHECK(as_mistral4.median_rel_rms > 0.05);
}

// Mistral Small 4's published shape (model-notes C.5) as a metadata-only GGUF: the cache is computed
// from the hyperparameters, so no tensor is needed. Per token: (kv_lora_rank 256 + qk_rope 64) f16
// values in each of 36 layers = 23040 bytes, where a decompressed cache would hold K and V of 32 heads
// of 128 = 589824 bytes (docs/PERFORMANCE.md).
TEST_CASE("Mistral Small 4's shape caches (kv_lora_rank + qk_rope) x 2 bytes x layers per token") {
    gguf::Writer writer;
    writer.add_string("general.architecture", "mistral4");
    writer.add_string("general.name", "Mistral Small 4 shape (metadata only)");
    for (auto [key, value] : {std::pair{"context_length", 262144u}, {"embedding_length", 4096u}, {"block_count", 36u},
                              {"attention.head_count", 32u}, {"attention.head_count_kv", 1u},
                              {"attention.q_lora_rank", 1024u}, {"attention.kv_lora_rank", 256u},
                              {"attention.key_length", 320u}, {"attention.value_length", 256u},
                              {"attention.key_length_mla", 128u}, {"attention.value_length_mla", 128u},
                              {"rope.dimension_count", 64u}, {"vocab_size", 131072u}, {"expert_count", 128u},
                              {"expert_used_count", 4u}, {"expert_shared_count", 1u},
                              {"expert_feed_forward_length", 2048u}, {"expert_gating_func", 1u},
                              {"rope.scaling.original_context_length", 8192u}})
        writer.add_u32(std::string("mistral4.") + key, value);
    writer.add_f32("mistral4.attention.layer_norm_rms_epsilon", 1e-6f);
    writer.add_f32("mistral4.rope.freq_base", 10000.0f);
    writer.add_string("mistral4.rope.scaling.type", "yarn");
    writer.add_f32("mistral4.rope.scaling.factor", 128.0f);
    writer.add_f32("mistral4.rope.scaling.yarn_log_multiplier", 0.1f);
    writer.add_bool("mistral4.expert_weights_norm", true);
    writer.add_f32("mistral4.expert_weights_scale", 1.0f);
    const gguf::File file = built(writer, "mistral_small_4_shape.gguf");

    const std::optional<model::KvLayout> layout = model::kv_layout_from_metadata(file);
    REQUIRE(layout);
    uint64_t bytes_per_token = 0;
    for (const model::KvLayerLayout& layer : layout->layers)
        bytes_per_token += ops::kv_cache_bytes(ops::KvType::F16, 1, layer.k_row) + ops::kv_cache_bytes(ops::KvType::F16, 1, layer.v_row);
    CHECK(layout->layers.size() == 36);
    CHECK(bytes_per_token == (256 + 64) * 2 * 36);
    CHECK(bytes_per_token * 25 < 36 * (32 * (64 + 64) + 32 * 128) * 2);  // over 25x below K and V of every head
}

TEST_CASE("mistral4: older joint attn_kv_b conversions and a missing kv_lora_rank are clear errors") {
    auto dir = test::fixture_dir("mistral4_f32");
    if (dir.empty()) return;
    const gguf::File original = gguf::File::open(dir / "model.gguf");
    for (auto [edit, message] : {std::pair{"kv_b", "blk.0.attn_kv_b.weight"},
                                 std::pair{"key", "mistral4.attention.kv_lora_rank"}}) {
        gguf::Writer writer;
        for (const gguf::KeyValue& kv : original.metadata())
            if (std::string_view(edit) != "key" || kv.key != "mistral4.attention.kv_lora_rank") writer.add_value(kv.key, kv.value);
        for (const gguf::Tensor& tensor : original.tensors()) {
            const bool joint = std::string_view(edit) == "kv_b" && tensor.name == "blk.0.attn_k_b.weight";
            writer.add_tensor(joint ? "blk.0.attn_kv_b.weight" : tensor.name, tensor.type,
                              std::span(tensor.ne).first(tensor.n_dims), tensor.data);
        }
        const gguf::File edited = gguf::File::from_bytes(writer.bytes(), "edited.gguf");
        CHECK_THROWS_WITH_AS(model::load_model(test::device(), edited), doctest::Contains(message), Error);
    }
}
