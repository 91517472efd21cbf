#include "convert/architectures.h"

#include <charconv>

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
