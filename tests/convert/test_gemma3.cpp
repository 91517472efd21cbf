// Gemma 3 conversion on a tiny checkpoint written here (six layers, so five slide over a 16-token
// window and one is global): llama.cpp's keys, tensor names and shapes, norms plus one, the
// SentencePiece vocabulary with its added tokens and special ids, and the converted file running in
// vkllm to llama.cpp's logits (tests/data/gemma3_convert), text-only and as the text model of
// Gemma3ForConditionalGeneration with linear RoPE scaling.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>

#include "../model/fixture_check.h"
#include "../model/session_check.h"
#include "convert/architectures.h"
#include "convert/convert.h"
#include "core/error.h"
#include "gguf/quants.h"
#include "gguf/reader.h"
#include "gpu_fixture.h"
#include "model/model.h"
#include "safetensors_writer.h"
#include "sentencepiece_writer.h"
#include "tokenizer/vocab.h"

using namespace vkllm;

namespace {

constexpr uint64_t n_embd = 128, n_layer = 6, n_head = 4, n_head_kv = 2, head_dim = 32, n_ff = 256,
                   n_pieces = 288, n_vocab = 300, embd_rows = 304, window = 16;

// <pad> <eos> <bos> <unk>, a few specials, the 256 byte pieces, then scored normal pieces.
convert::SentencePieceModel tokenizer_model() {
    using convert::PieceType;
    convert::SentencePieceModel model;
    model.pieces = {{"<pad>", 0, PieceType::Control},           {"<eos>", 0, PieceType::Control},
                    {"<bos>", 0, PieceType::Control},           {"<unk>", 0, PieceType::Unknown},
                    {"<mask>", 0, PieceType::UserDefined},      {"<start_of_turn>", 0, PieceType::UserDefined},
                    {"<end_of_turn>", 0, PieceType::Control},   {"<unused0>", 0, PieceType::Unused}};
    for (int b = 0; b < 256; ++b) model.pieces.push_back({fmt::format("<0x{:02X}>", b), 0, PieceType::Byte});
    for (int i = 0; model.pieces.size() < n_pieces; ++i)
        model.pieces.push_back({(i % 2 ? "" : "\xE2\x96\x81") + std::string(1, char('a' + i / 2)), -0.5f * float(i),
                                PieceType::Normal});
    model.model_type = convert::SpmModelType::Bpe;
    model.byte_fallback = true;
    model.add_dummy_prefix = false;
    return model;
}

void write_tokenizer_files(const std::filesystem::path& dir) {
    test::write_file(dir / "tokenizer.model", test::sentencepiece_bytes(tokenizer_model()));
    std::ofstream(dir / "added_tokens.json") << R"({"<image_soft_token>": 288, "<past_the_vocabulary>": 400})";
    std::ofstream(dir / "tokenizer_config.json") << R"({"add_bos_token": true, "add_eos_token": false,
  "bos_token": "<bos>", "eos_token": "<eos>", "pad_token": "<pad>", "unk_token": "<unk>",
  "chat_template": "{{ bos_token }}{% for m in messages %}{{ m['content'] }}{% endfor %}",
  "added_tokens_decoder": {
    "0": {"content": "<pad>", "special": true}, "1": {"content": "<eos>", "special": true},
    "2": {"content": "<bos>", "special": true}, "3": {"content": "<unk>", "special": true},
    "5": {"content": "<start_of_turn>", "special": true}, "7": {"content": "<unused0>", "special": false},
    "288": {"content": "<image_soft_token>", "special": true},
    "290": {"content": "\u2581\u2581x", "special": false}}})";
    std::ofstream(dir / "tokenizer.json") << R"({"added_tokens": [{"id": 0, "content": "<pad>"},
  {"id": 1, "content": "<eos>"}, {"id": 2, "content": "<bos>"}, {"id": 3, "content": "<unk>"}],
  "post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<bos>", "type_id": 0}},
    {"Sequence": {"id": "A", "type_id": 0}}]}})";
}

std::string text_config(const std::string& rope_scaling, uint64_t vocab_size = n_vocab) {
    return fmt::format(R"("hidden_size": {}, "intermediate_size": {}, "num_hidden_layers": {},
    "num_attention_heads": {}, "num_key_value_heads": {}, "head_dim": {}, "max_position_embeddings": 32768,
    "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "rope_local_base_freq": 10000.0, "rope_scaling": {},
    "sliding_window": {}, "query_pre_attn_scalar": {}, "final_logit_softcapping": null,
    "attn_logit_softcapping": null, "vocab_size": {})",
                       n_embd, n_ff, n_layer, n_head, n_head_kv, head_dim, rope_scaling, window, head_dim,
                       vocab_size);
}

// The stored (bf16-rounded) values of the tensors the checks look at.
struct Checkpoint {
    std::filesystem::path dir;
    std::vector<float> output_norm, post_ffw_norm_3, attn_q_0;
};

// Gemma3ForCausalLM, or Gemma3ForConditionalGeneration with a vision tower to skip and linear RoPE
// scaling (factor 8); the same weights either way.
Checkpoint write_checkpoint(bool conditional) {
    const auto dir = std::filesystem::temp_directory_path() /
                     (conditional ? "vkllm_test_gemma3_cg_hf" : "vkllm_test_gemma3_hf");
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    write_tokenizer_files(dir);
    std::ofstream config(dir / "config.json");
    if (conditional)
        config << fmt::format(R"({{"architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3",
  "text_config": {{"model_type": "gemma3_text", {}}}, "vision_config": {{"model_type": "siglip_vision_model"}},
  "bos_token_id": 2, "eos_token_id": [1, 106], "pad_token_id": 0}})",
                              text_config(R"({"rope_type": "linear", "factor": 8.0})"));
    else
        config << fmt::format(R"({{"architectures": ["Gemma3ForCausalLM"], "model_type": "gemma3_text", {},
  "bos_token_id": 2, "eos_token_id": [1, 106], "pad_token_id": 0}})",
                              text_config("null"));
    config.close();

    const std::string prefix = conditional ? "language_model.model." : "model.";
    std::mt19937 rng(1234);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    Checkpoint checkpoint{dir, {}, {}, {}};
    std::vector<test::StTensor> tensors;
    const auto add = [&](const std::string& name, std::vector<uint64_t> shape, float scale) {
        uint64_t n = 1;
        for (uint64_t d : shape) n *= d;
        std::vector<float> values(n);
        for (float& v : values) v = gguf::bf16_to_fp32(gguf::fp32_to_bf16(scale * normal(rng)));
        tensors.push_back(test::bf16_tensor(prefix + name, std::move(shape), values));
        return values;
    };
    add("embed_tokens.weight", {embd_rows, n_embd}, 0.5f);
    checkpoint.output_norm = add("norm.weight", {n_embd}, 0.2f);
    for (uint64_t il = 0; il < n_layer; ++il) {
        const std::string p = fmt::format("layers.{}.", il);
        add(p + "input_layernorm.weight", {n_embd}, 0.2f);
        const std::vector<float> q = add(p + "self_attn.q_proj.weight", {n_head * head_dim, n_embd}, 0.1f);
        if (il == 0) checkpoint.attn_q_0 = q;
        add(p + "self_attn.k_proj.weight", {n_head_kv * head_dim, n_embd}, 0.1f);
        add(p + "self_attn.v_proj.weight", {n_head_kv * head_dim, n_embd}, 0.1f);
        add(p + "self_attn.q_norm.weight", {head_dim}, 0.2f);
        add(p + "self_attn.k_norm.weight", {head_dim}, 0.2f);
        add(p + "self_attn.o_proj.weight", {n_embd, n_head * head_dim}, 0.1f);
        add(p + "post_attention_layernorm.weight", {n_embd}, 0.2f);
        add(p + "pre_feedforward_layernorm.weight", {n_embd}, 0.2f);
        add(p + "mlp.gate_proj.weight", {n_ff, n_embd}, 0.1f);
        add(p + "mlp.up_proj.weight", {n_ff, n_embd}, 0.1f);
        add(p + "mlp.down_proj.weight", {n_embd, n_ff}, 0.1f);
        const std::vector<float> post_ffw = add(p + "post_feedforward_layernorm.weight", {n_embd}, 0.2f);
        if (il == 3) checkpoint.post_ffw_norm_3 = post_ffw;
    }
    if (conditional) {
        tensors.push_back(test::f32_tensor("vision_tower.vision_model.post_layernorm.weight", {4}, {1, 2, 3, 4}));
        tensors.push_back(test::f32_tensor("multi_modal_projector.mm_soft_emb_norm.weight", {4}, {1, 2, 3, 4}));
    }
    test::write_file(dir / "model.safetensors", test::safetensors_bytes(tensors));
    return checkpoint;
}

// Converts (copied to $VKLLM_TEST_WRITE_DIR when set, to make the reference logits from).
std::filesystem::path convert_checkpoint(const Checkpoint& checkpoint, const std::string& name,
                                         convert::OutputType type = convert::OutputType::F32) {
    const auto output = std::filesystem::temp_directory_path() / name;
    const auto start = std::chrono::steady_clock::now();
    convert::convert({.hf_dir = checkpoint.dir, .output = output, .type = type});
    MESSAGE(name << ": converted in "
                 << std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count()
                 << " ms");
    if (const char* dir = std::getenv("VKLLM_TEST_WRITE_DIR"))
        std::filesystem::copy_file(output, std::filesystem::path(dir) / name,
                                   std::filesystem::copy_options::overwrite_existing);
    return output;
}

std::vector<float> plus_one(std::vector<float> values) {
    for (float& v : values) v += 1.0f;
    return values;
}

// llama.cpp's keys and no others; linear RoPE scaling for the conditional-generation variant.
void check_keys(const gguf::File& file, bool conditional) {
    std::set<std::string> keys;
    for (const gguf::KeyValue& kv : file.metadata()) keys.insert(std::string(kv.key));
    std::set<std::string> want_keys = {
        "general.architecture", "general.type", "general.name", "general.size_label",
        "general.quantization_version", "general.file_type", "gemma3.context_length", "gemma3.embedding_length",
        "gemma3.block_count", "gemma3.feed_forward_length", "gemma3.attention.head_count",
        "gemma3.attention.head_count_kv", "gemma3.attention.layer_norm_rms_epsilon", "gemma3.attention.key_length",
        "gemma3.attention.value_length", "gemma3.rope.freq_base", "gemma3.attention.sliding_window",
        "tokenizer.ggml.model", "tokenizer.ggml.pre", "tokenizer.ggml.tokens", "tokenizer.ggml.scores",
        "tokenizer.ggml.token_type", "tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
        "tokenizer.ggml.unknown_token_id", "tokenizer.ggml.padding_token_id", "tokenizer.ggml.add_bos_token",
        "tokenizer.ggml.add_eos_token", "tokenizer.chat_template", "tokenizer.ggml.add_space_prefix"};
    if (conditional) want_keys.insert({"gemma3.rope.scaling.type", "gemma3.rope.scaling.factor"});
    CHECK(keys == want_keys);
    CHECK(file.get_string("general.architecture") == "gemma3");
    CHECK(file.get_u32("gemma3.context_length") == 32768u);
    CHECK(file.get_u32("gemma3.embedding_length") == n_embd);
    CHECK(file.get_u32("gemma3.block_count") == n_layer);
    CHECK(file.get_u32("gemma3.feed_forward_length") == n_ff);
    CHECK(file.get_u32("gemma3.attention.head_count") == n_head);
    CHECK(file.get_u32("gemma3.attention.head_count_kv") == n_head_kv);
    CHECK(file.get_u32("gemma3.attention.key_length") == head_dim);
    CHECK(file.get_u32("gemma3.attention.value_length") == head_dim);
    CHECK(file.get_f32("gemma3.attention.layer_norm_rms_epsilon") == 1e-6f);
    CHECK(file.get_f32("gemma3.rope.freq_base") == 1e6f);
    CHECK(file.get_u32("gemma3.attention.sliding_window") == window);
    if (conditional) {
        CHECK(file.get_string("gemma3.rope.scaling.type") == "linear");
        CHECK(file.get_f32("gemma3.rope.scaling.factor") == 8.0f);
    }
}

void check_tensors(const gguf::File& file, const Checkpoint& checkpoint) {
    std::set<std::string> names;
    for (const gguf::Tensor& t : file.tensors()) names.insert(std::string(t.name));
    std::set<std::string> want = {"token_embd.weight", "output_norm.weight"};
    for (uint64_t il = 0; il < n_layer; ++il)
        for (const char* name : {"attn_norm", "attn_q", "attn_k", "attn_v", "attn_q_norm", "attn_k_norm",
                                 "attn_output", "post_attention_norm", "ffn_norm", "ffn_gate", "ffn_up", "ffn_down",
                                 "post_ffw_norm"})
            want.insert(fmt::format("blk.{}.{}.weight", il, name));
    CHECK(names == want);  // no output.weight: tied; nothing of the vision tower
    using Ne = std::array<uint64_t, 4>;
    CHECK(file.tensor("token_embd.weight").ne == Ne{n_embd, n_vocab, 1, 1});  // rows past the vocabulary dropped
    CHECK(file.tensor("blk.2.attn_q.weight").ne == Ne{n_embd, n_head * head_dim, 1, 1});
    CHECK(file.tensor("blk.2.attn_k.weight").ne == Ne{n_embd, n_head_kv * head_dim, 1, 1});
    CHECK(file.tensor("blk.2.attn_k_norm.weight").ne == Ne{head_dim, 1, 1, 1});
    CHECK(file.tensor("blk.2.attn_output.weight").ne == Ne{n_head * head_dim, n_embd, 1, 1});
    CHECK(file.tensor("blk.2.ffn_down.weight").ne == Ne{n_ff, n_embd, 1, 1});
    CHECK(gguf::dequantize(file.tensor("output_norm.weight")) == plus_one(checkpoint.output_norm));
    CHECK(gguf::dequantize(file.tensor("blk.3.post_ffw_norm.weight")) == plus_one(checkpoint.post_ffw_norm_3));
    CHECK(gguf::dequantize(file.tensor("blk.0.attn_q.weight")) == checkpoint.attn_q_0);  // NeoX RoPE: not permuted
}

void check_vocabulary(const gguf::File& file) {
    const convert::SentencePieceModel model = tokenizer_model();
    std::vector<std::string> tokens;
    std::vector<float> scores;
    std::vector<int32_t> types;
    for (const convert::Piece& piece : model.pieces) {
        tokens.push_back(piece.text);
        scores.push_back(piece.score);
        types.push_back(int32_t(piece.type == convert::PieceType::UserDefined ? convert::PieceType::Normal : piece.type));
    }
    for (uint64_t id = n_pieces; id < n_vocab; ++id) {
        tokens.push_back(fmt::format("[PAD{}]", id));
        scores.push_back(-10000.0f);
        types.push_back(5);
    }
    // tokenizer_config.json's added_tokens_decoder over the pieces and added_tokens.json's token
    const auto added = [&](uint64_t id, std::string text, int32_t type) {
        tokens[id] = std::move(text), scores[id] = -1000.0f, types[id] = type;
    };
    for (auto [id, text] : {std::pair{0, "<pad>"}, {1, "<eos>"}, {2, "<bos>"}, {3, "<unk>"}, {5, "<start_of_turn>"}})
        added(uint64_t(id), text, 3);
    added(7, "<unused0>", 3);  // not marked special, but looks it
    added(288, "<image_soft_token>", 3);
    added(290, "  x", 4);  // user-defined: visible spaces stored as spaces
    const auto got_tokens = *file.get_string_array("tokenizer.ggml.tokens");
    CHECK(std::vector<std::string>(got_tokens.begin(), got_tokens.end()) == tokens);
    CHECK(*file.get_f32_array("tokenizer.ggml.scores") == scores);
    CHECK(*file.get_i32_array("tokenizer.ggml.token_type") == types);
    CHECK(file.get_string("tokenizer.ggml.model") == "llama");
    CHECK(file.get_string("tokenizer.ggml.pre") == "default");
    CHECK(file.get_u32("tokenizer.ggml.bos_token_id") == 2u);
    CHECK(file.get_u32("tokenizer.ggml.eos_token_id") == 1u);  // config.json's list of two is ignored
    CHECK(file.get_u32("tokenizer.ggml.unknown_token_id") == 3u);
    CHECK(file.get_u32("tokenizer.ggml.padding_token_id") == 0u);
    CHECK(file.get_bool("tokenizer.ggml.add_bos_token") == true);
    CHECK(file.get_bool("tokenizer.ggml.add_eos_token") == false);
    CHECK(file.get_bool("tokenizer.ggml.add_space_prefix") == false);
    CHECK(file.get_string("tokenizer.chat_template") ==
          "{{ bos_token }}{% for m in messages %}{{ m['content'] }}{% endfor %}");
    const tokenizer::Vocab vocab = tokenizer::from_gguf(file);
    CHECK(vocab.size() == n_vocab);
    CHECK(vocab.bos == 2);
}

}  // namespace

TEST_CASE("Gemma 3: llama.cpp's keys, norms plus one, the SentencePiece vocabulary, llama.cpp's logits") {
    const auto data = std::filesystem::path(VKLLM_SOURCE_DIR) / "tests/data/gemma3_convert";
    const std::vector<int32_t> tokens = test::read_tokens(data / "tokens.txt");
    REQUIRE(tokens.size() > 2 * window);
    std::vector<float> base_logits;
    for (bool conditional : {false, true}) {
        CAPTURE(conditional);
        const Checkpoint checkpoint = write_checkpoint(conditional);
        const auto path = convert_checkpoint(checkpoint, conditional ? "gemma3_convert_rope_linear8.gguf"
                                                                     : "gemma3_convert.gguf");
        const gguf::File file = gguf::File::open(path);
        check_keys(file, conditional);
        check_tensors(file, checkpoint);
        check_vocabulary(file);

        auto model = model::load_model(test::device(), file);
        const std::vector<float> logits = test::session_logits(*model, tokens);
        const auto reference = data / (conditional ? "logits-rope-linear8.f32" : "logits.f32");
        std::string detail;
        const bool passed = test::meets_criteria(logits, reference, n_vocab, false, detail);
        MESSAGE(std::string(conditional ? "rope linear 8: " : "text only: ") << detail);
        CHECK(passed);
        if (!conditional) base_logits = logits;
        else CHECK(test::compare_logits(logits, base_logits, n_vocab).median_rel_rms > 1e-3);  // the factor matters
        std::filesystem::remove(path);
        std::filesystem::remove_all(checkpoint.dir);
    }
}

TEST_CASE("Gemma 3: a checkpoint without a usable tokenizer, or with fewer embedding rows than tokens, is refused") {
    const Checkpoint checkpoint = write_checkpoint(false);
    const auto output = std::filesystem::temp_directory_path() / "vkllm_test_gemma3_refused.gguf";
    std::ofstream(checkpoint.dir / "config.json")
        << fmt::format(R"({{"architectures": ["Gemma3ForCausalLM"], {}}})", text_config("null", embd_rows + 16));
    CHECK_THROWS_WITH_AS(convert::convert({.hf_dir = checkpoint.dir, .output = output}),
                         doctest::Contains("model.safetensors: tensor 'model.embed_tokens.weight' has fewer rows than "
                                           "the 320 tokens of the vocabulary"),
                         Error);
    std::filesystem::remove(checkpoint.dir / "tokenizer.model");  // the test's tokenizer.json has no model
    CHECK_THROWS_WITH_AS(convert::convert({.hf_dir = checkpoint.dir, .output = output}),
                         doctest::Contains("tokenizer.json: not a SentencePiece-style tokenizer"), Error);
    std::filesystem::remove(checkpoint.dir / "tokenizer.json");
    CHECK_THROWS_WITH_AS(convert::convert({.hf_dir = checkpoint.dir, .output = output}),
                         doctest::Contains("no tokenizer.model or tokenizer.json"), Error);
    CHECK(!std::filesystem::exists(output));
    std::filesystem::remove_all(checkpoint.dir);
}

// Gemma 3 4B's published config.json leaves head counts, head_dim, vocab_size, rope_theta and the
// context length to transformers' defaults, which llama.cpp's converter sees through AutoConfig.
TEST_CASE("Gemma 3: a published config (4B) gets transformers' defaults for the keys it leaves out") {
    const auto dir = std::filesystem::temp_directory_path() / "vkllm_test_gemma3_4b_config";
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    test::write_file(dir / "tokenizer.model", test::sentencepiece_bytes(tokenizer_model()));
    test::write_file(dir / "model.safetensors",
                     test::safetensors_bytes({test::f32_tensor("model.language_model.norm.weight", {2560},
                                                               std::vector<float>(2560, 0.5f))}));
    // as published (transformers 4.50), and with transformers 5's rope_parameters per layer type
    const std::string rope_scaling = R"("rope_scaling": {"factor": 8.0, "rope_type": "linear"})";
    const std::string rope_parameters = R"("rope_parameters": {"full_attention": {"rope_type": "linear",
      "factor": 8.0, "rope_theta": 1000000.0}, "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}})";
    for (const std::string& rope : {rope_scaling, rope_parameters}) {
        CAPTURE(rope);
        const std::string config = fmt::format(R"({{"architectures": ["Gemma3ForConditionalGeneration"],
  "boi_token_index": 255999, "eoi_token_index": 256000, "eos_token_id": [1, 106], "image_token_index": 262144,
  "initializer_range": 0.02, "mm_tokens_per_image": 256, "model_type": "gemma3",
  "text_config": {{"hidden_size": 2560, "intermediate_size": 10240, "model_type": "gemma3_text",
    "num_hidden_layers": 34, {}, "sliding_window": 1024}},
  "torch_dtype": "bfloat16", "transformers_version": "4.50.0.dev0",
  "vision_config": {{"hidden_size": 1152, "image_size": 896, "intermediate_size": 4304,
    "model_type": "siglip_vision_model", "num_attention_heads": 16, "num_hidden_layers": 27, "patch_size": 14,
    "vision_use_head": false}}}})",
                                               rope);
        const convert::Source source{dir, convert::HfConfig::parse(config, "config.json"),
                                     convert::Checkpoint::open(dir)};
        const convert::Plan plan = convert::plan_model(source);
        const gguf::File file = gguf::File::from_bytes(plan.metadata.bytes(), "4b.gguf");
        CHECK(file.get_u32("gemma3.context_length") == 131072u);
        CHECK(file.get_u32("gemma3.embedding_length") == 2560u);
        CHECK(file.get_u32("gemma3.block_count") == 34u);
        CHECK(file.get_u32("gemma3.feed_forward_length") == 10240u);
        CHECK(file.get_u32("gemma3.attention.head_count") == 8u);
        CHECK(file.get_u32("gemma3.attention.head_count_kv") == 4u);
        CHECK(file.get_u32("gemma3.attention.key_length") == 256u);
        CHECK(file.get_u32("gemma3.attention.value_length") == 256u);
        CHECK(file.get_f32("gemma3.attention.layer_norm_rms_epsilon") == 1e-6f);
        CHECK(file.get_f32("gemma3.rope.freq_base") == 1e6f);
        CHECK(file.get_u32("gemma3.attention.sliding_window") == 1024u);
        CHECK(file.get_string("gemma3.rope.scaling.type") == "linear");
        CHECK(file.get_f32("gemma3.rope.scaling.factor") == 8.0f);
        CHECK(file.get_string_array("tokenizer.ggml.tokens")->size() == 262208u);  // padded to vocab_size
        REQUIRE(plan.tensors.size() == 1);
        CHECK(plan.tensors[0].name == "output_norm.weight");
    }
    std::filesystem::remove_all(dir);
}

// llama-quant.cpp gives tied token embeddings the output's type (Q6_K, Q8_0 where a row is not a
// multiple of 256), not the matrices' Q4_0; vkllm runs the file to llama.cpp's logits for it.
TEST_CASE("Gemma 3 to Q4_0: the tied token embeddings are quantized as the output, logits as llama.cpp's") {
    const Checkpoint checkpoint = write_checkpoint(false);
    const auto output = convert_checkpoint(checkpoint, "gemma3_convert_q4_0.gguf", convert::OutputType::Q4_0);
    const gguf::File file = gguf::File::open(output);
    CHECK(file.tensor("token_embd.weight").type == gguf::GgmlType::Q8_0);
    CHECK(file.tensor("blk.0.attn_q.weight").type == gguf::GgmlType::Q4_0);
    CHECK(file.tensor("blk.0.attn_norm.weight").type == gguf::GgmlType::F32);
    auto model = model::load_model(test::device(), file);
    const auto data = std::filesystem::path(VKLLM_SOURCE_DIR) / "tests/data/gemma3_convert";
    const std::vector<float> logits = test::session_logits(*model, test::read_tokens(data / "tokens.txt"));
    std::string detail;
    const bool passed = test::meets_criteria(logits, data / "logits-q4_0.f32", n_vocab, true, detail);
    MESSAGE("q4_0: " << detail);
    CHECK(passed);
    std::filesystem::remove(output);
    std::filesystem::remove_all(checkpoint.dir);
}
