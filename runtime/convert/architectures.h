#pragma once
// The Hugging Face model classes vkllm converts, one file each, and the dispatch on config.json.
#include "convert/plan.h"

namespace vkllm::convert {

// The text model; throws naming the class when it is not one of those below.
Plan plan_model(const Source& source);
// The vision encoder and projector (mmproj); throws when the checkpoint has none.
Plan plan_mmproj(const Source& source);

// Mistral3ForConditionalGeneration, text model ministral3 / mistral (mistral3.cpp).
Plan plan_mistral3(const Source& source);
Plan plan_pixtral_mmproj(const Source& source);
// Mistral3ForConditionalGeneration, text model mistral4: Mistral Small 4 (mistral4.cpp).
Plan plan_mistral4(const Source& source);
// Gemma3ForCausalLM, and the text model of Gemma3ForConditionalGeneration (gemma3.cpp); the latter's
// SigLIP encoder and projector.
Plan plan_gemma3(const Source& source);
Plan plan_gemma3_mmproj(const Source& source);

// Mapping helpers shared by the architecture files.
// "layers.N.rest" -> (N, "rest") when `name` starts with "<prefix>layers.N.".
struct LayerName {
    uint32_t layer;
    std::string_view rest;
};
std::optional<LayerName> split_layer_name(std::string_view name, std::string_view prefix);
// An mmproj plan with the keys every vision encoder has (llama.cpp's MmprojModel): its sizes from
// `vision`, the text model's width, and preprocessor_config.json's image_mean and image_std.
Plan vision_encoder_plan(const Source& source, const ConfigSection& vision);
// Adds tensor t under `name` with rows from `rows` (the shape is t's, reversed).
void add_tensor(Plan& plan, std::string name, const SafeTensor& t, RowSource rows);
// A checkpoint tensor name with transformers 5's "model." wrapper of multimodal models removed,
// so both layouts read "language_model.*", "vision_tower.*", "multi_modal_projector.*".
std::string normalized_name(std::string_view name);

}  // namespace vkllm::convert
