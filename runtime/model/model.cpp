#include "model/model.h"

#include "core/error.h"
#include "model/architectures.h"

namespace vkllm::model {
namespace {

// Adding an architecture: docs/ADDING.md.
constexpr Architecture architectures[] = {
    {"llama", make_llama, llama_kv_layout},
    {"mistral3", make_llama, llama_kv_layout},
    {"gemma3", make_gemma3, gemma3_kv_layout},
    {"mistral4", make_mistral4, mistral4_kv_layout},
    {"deepseek2", make_mistral4, mistral4_kv_layout},
    {"minimax-m3", make_minimax_m3, nullptr},
    {"bert", make_bert, nullptr},
};

const Architecture* find_architecture(std::string_view name) {
    for (const Architecture& architecture : architectures)
        if (architecture.name == name) return &architecture;
    return nullptr;
}

}  // namespace

std::optional<KvLayout> kv_layout_from_metadata(const gguf::File& file) {
    auto arch = file.get_string("general.architecture");
    const Architecture* architecture = arch ? find_architecture(*arch) : nullptr;
    if (!architecture || !architecture->kv_layout) return std::nullopt;
    return architecture->kv_layout(file, std::string(*arch));
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
    if (const Architecture* architecture = find_architecture(*arch))
        return architecture->make(device, file, std::string(*arch), options);
    std::string known;
    for (const Architecture& architecture : architectures)
        known += (known.empty() ? "" : ", ") + std::string(architecture.name);
    fail("{}: architecture '{}' is not supported (vkllm runs: {})", file.name(), gguf::printable(*arch), known);
}

}  // namespace vkllm::model
