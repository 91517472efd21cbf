#include "convert/architectures.h"

#include <charconv>
#include <cmath>

#include "core/error.h"

namespace vkllm::convert {

Plan plan_model(const Source& source) {
    const std::string architecture = source.config.architecture();
    if (architecture == "Mistral3ForConditionalGeneration")
        return source.config.text().opt_string("model_type") == "mistral4" ? plan_mistral4(source)
                                                                           : plan_mistral3(source);
    if (architecture == "Gemma3ForCausalLM" || architecture == "Gemma3ForConditionalGeneration")
        return plan_gemma3(source);
    fail("{}: model class '{}' is not supported (Mistral3ForConditionalGeneration, Gemma3ForCausalLM and "
         "Gemma3ForConditionalGeneration are)",
         source.config.root().where(), architecture);
}

Plan plan_mmproj(const Source& source) {
    const std::string architecture = source.config.architecture();
    if (architecture == "Mistral3ForConditionalGeneration") return plan_pixtral_mmproj(source);
    if (architecture == "Gemma3ForConditionalGeneration") return plan_gemma3_mmproj(source);
    fail("{}: no vision encoder to convert for model class '{}'", source.config.root().where(), architecture);
}

std::optional<LayerName> split_layer_name(std::string_view name, std::string_view prefix) {
    const std::string marker = std::string(prefix) + "layers.";
    if (!name.starts_with(marker)) return std::nullopt;
    name.remove_prefix(marker.size());
    uint32_t layer = 0;
    auto [end, error] = std::from_chars(name.data(), name.data() + name.size(), layer);
    if (error != std::errc() || end == name.data() + name.size() || *end != '.') return std::nullopt;
    return LayerName{layer, name.substr(size_t(end - name.data()) + 1)};
}

Plan vision_encoder_plan(const Source& source, const ConfigSection& vision) {
    Plan plan;
    plan.type = "mmproj";
    gguf::Writer& w = plan.metadata;
    w.add_string("general.architecture", "clip");
    w.add_bool("clip.has_vision_encoder", true);
    w.add_u32("clip.vision.projection_dim", uint32_t(source.config.text().u64("hidden_size")));
    w.add_u32("clip.vision.image_size", uint32_t(vision.u64("image_size")));
    w.add_u32("clip.vision.patch_size", uint32_t(vision.u64("patch_size")));
    w.add_u32("clip.vision.embedding_length", uint32_t(vision.u64("hidden_size")));
    w.add_u32("clip.vision.feed_forward_length", uint32_t(vision.u64("intermediate_size")));
    w.add_u32("clip.vision.block_count", uint32_t(vision.u64("num_hidden_layers")));
    w.add_u32("clip.vision.attention.head_count", uint32_t(vision.u64("num_attention_heads")));

    const nlohmann::json preprocessor = read_json_file(source.dir / "preprocessor_config.json");
    for (const char* key : {"image_mean", "image_std"}) {
        const auto it = preprocessor.find(key);
        if (it == preprocessor.end() || !it->is_array() || it->size() != 3)
            fail("{}: {} is not a list of 3 numbers", (source.dir / "preprocessor_config.json").string(), key);
        std::vector<float> values;
        for (const auto& v : *it) values.push_back(v.is_number() ? v.get<float>() : NAN);
        w.add_array(fmt::format("clip.vision.{}", key), std::span<const float>(values));
    }
    return plan;
}

void add_tensor(Plan& plan, std::string name, const SafeTensor& t, RowSource rows) {
    plan.tensors.push_back({std::move(name), ggml_shape(t), std::move(rows)});
}

std::string normalized_name(std::string_view name) {
    if (name == "lm_head.weight") return "language_model.lm_head.weight";
    if (name.starts_with("model.language_model.") || name.starts_with("model.vision_tower.") ||
        name.starts_with("model.multi_modal_projector."))
        name.remove_prefix(6);
    std::string out(name);
    if (out.starts_with("language_model.model.")) out.erase(15, 6);
    return out;
}

}  // namespace vkllm::convert
