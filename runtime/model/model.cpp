#include "model/model.h"

#include <utility>

#include "core/error.h"
#include "model/architectures.h"

namespace vkllm::model {
namespace {

constexpr std::pair<std::string_view, MakeModel> architectures[] = {
    {"llama", make_llama},
    {"mistral3", make_llama},
    {"gemma3", make_gemma3},
    {"mistral4", make_mistral4},
    {"deepseek2", make_mistral4},
    {"minimax-m3", make_minimax_m3},
};

constexpr std::pair<std::string_view, KvLayoutFromMetadata> kv_layouts[] = {
    {"gemma3", gemma3_kv_layout},
    {"mistral4", mistral4_kv_layout},
    {"deepseek2", mistral4_kv_layout},
};

}  // namespace

std::optional<KvLayout> kv_layout_from_metadata(const gguf::File& file) {
    auto arch = file.get_string("general.architecture");
    for (auto [name, layout] : kv_layouts)
        if (arch && name == *arch) return layout(file, std::string(*arch));
    return std::nullopt;
}

uint64_t weight_bytes(const gguf::File& file) {
    uint64_t total = 0;
    for (const gguf::Tensor& tensor : file.tensors()) total += tensor.nbytes;
    return total;
}

ModelInfo model_info(const gguf::File& file, const std::string& arch, const BaseHparams& hp) {
    return {arch, std::string(file.get_string("general.name").value_or(file.name())), hp.n_vocab, hp.n_ctx_train,
            hp.n_embd, hp.n_layer, weight_bytes(file)};
}

std::unique_ptr<Model> load_model(gpu::Device& device, const gguf::File& file, const LoadOptions& options) {
    auto arch = file.get_string("general.architecture");
    if (!arch) fail("{}: 'general.architecture' is missing; is this a model file?", file.name());
    for (auto [name, make] : architectures)
        if (name == *arch) return make(device, file, std::string(*arch), options);
    std::string known;
    for (auto [name, make] : architectures) known += (known.empty() ? "" : ", ") + std::string(name);
    fail("{}: architecture '{}' is not supported (vkllm runs: {})", file.name(), gguf::printable(*arch), known);
}

}  // namespace vkllm::model
