// The Gemma 3 mmproj (SigLIP encoder and Gemma's projector): the shared fixture's mmproj, which
// llama.cpp converted from a tiny Gemma 3, written back as the Hugging Face checkpoint it came from
// and converted again to Q8_0, must come out the same, key for key and byte for byte.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <fmt/format.h>

#include "convert/convert.h"
#include "gguf/quants.h"
#include "gguf/reader.h"
#include "gguf_compare.h"
#include "safetensors_writer.h"
#include "test_main.h"

using namespace vkllm;

namespace {

// The Hugging Face name of each GGUF tensor (transformers' SigLIP and Gemma3MultiModalProjector).
std::string hf_name(std::string_view name) {
    static const std::map<std::string_view, std::string_view, std::less<>> names = {
        {"mm.input_projection.weight", "multi_modal_projector.mm_input_projection_weight"},
        {"mm.soft_emb_norm.weight", "multi_modal_projector.mm_soft_emb_norm.weight"},
        {"v.patch_embd.weight", "vision_tower.vision_model.embeddings.patch_embedding.weight"},
        {"v.patch_embd.bias", "vision_tower.vision_model.embeddings.patch_embedding.bias"},
        {"v.position_embd.weight", "vision_tower.vision_model.embeddings.position_embedding.weight"},
        {"v.post_ln.weight", "vision_tower.vision_model.post_layernorm.weight"},
        {"v.post_ln.bias", "vision_tower.vision_model.post_layernorm.bias"},
    };
    static const std::map<std::string_view, std::string_view, std::less<>> layer_names = {
        {"ln1", "layer_norm1"}, {"ln2", "layer_norm2"}, {"attn_q", "self_attn.q_proj"}, {"attn_k", "self_attn.k_proj"},
        {"attn_v", "self_attn.v_proj"}, {"attn_out", "self_attn.out_proj"}, {"ffn_up", "mlp.fc1"},
        {"ffn_down", "mlp.fc2"},
    };
    if (auto it = names.find(name); it != names.end()) return std::string(it->second);
    REQUIRE(name.starts_with("v.blk."));
    const size_t layer_end = name.find('.', 6), kind = name.rfind('.');
    const std::string_view tensor = name.substr(layer_end + 1, kind - layer_end - 1);
    REQUIRE(layer_names.contains(tensor));
    return fmt::format("vision_tower.vision_model.encoder.layers.{}.{}{}", name.substr(6, layer_end - 6),
                       layer_names.at(tensor), name.substr(kind));
}

}  // namespace

TEST_CASE("Gemma 3 mmproj: llama.cpp's conversion of a tiny Gemma 3 comes back key for key, byte for byte") {
    const auto fixture_file = test::shared_path("fixtures/vision/gemma3_vis/mmproj.gguf");
    if (!fixture_file) return;
    const std::filesystem::path& fixture = *fixture_file;
    const gguf::File want = gguf::File::open(fixture);
    const auto dir = std::filesystem::temp_directory_path() / "vkllm_test_gemma3_mmproj_hf";
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    std::vector<test::StTensor> tensors;
    for (const gguf::Tensor& t : want.tensors()) {
        std::vector<float> values = gguf::dequantize(t);
        if (t.name == "mm.soft_emb_norm.weight")
            for (float& v : values) v -= 1.0f;  // stored as an offset from one, like the text norms
        const std::vector<uint64_t> shape(t.ne.rbegin() + (4 - t.n_dims), t.ne.rend());  // PyTorch order
        tensors.push_back(test::f32_tensor(hf_name(t.name), shape, values));
    }
    test::write_file(dir / "model.safetensors", test::safetensors_bytes(tensors));
    std::ofstream(dir / "config.json") << R"({"architectures": ["Gemma3ForConditionalGeneration"],
  "text_config": {"model_type": "gemma3_text", "hidden_size": 128},
  "vision_config": {"model_type": "siglip_vision_model", "hidden_size": 128, "intermediate_size": 512,
    "num_hidden_layers": 4, "num_attention_heads": 4, "image_size": 32, "patch_size": 2, "layer_norm_eps": 1e-6}})";
    std::ofstream(dir / "preprocessor_config.json")
        << R"({"image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5], "image_seq_length": 256})";

    const auto output = std::filesystem::temp_directory_path() / "vkllm_test_gemma3_mmproj.gguf";
    convert::convert({.hf_dir = dir, .mmproj = output, .type = convert::OutputType::Q8_0});
    const gguf::File got = gguf::File::open(output);
    // general.type ("clip-vision" then, "mmproj" now) and the model card's tags depend on the version
    test::check_same_keys(got, want, {"general.tags", "general.type"});
    std::set<std::string> want_keys = {"general.name", "general.type"}, got_keys;
    for (const gguf::KeyValue& kv : want.metadata())
        if (kv.key != "general.tags") want_keys.insert(std::string(kv.key));
    for (const gguf::KeyValue& kv : got.metadata()) got_keys.insert(std::string(kv.key));
    CHECK(got_keys == want_keys);
    CHECK(got.get_string("general.type") == "mmproj");
    test::check_same_tensors(got, want);
    std::filesystem::remove(output);
    std::filesystem::remove_all(dir);
}
