#pragma once
// What each architecture file gives model.cpp's registry, and the model class they all derive from.
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "model/hparams.h"
#include "model/model.h"

namespace vkllm::model {

// What every architecture reports of itself: names, sizes and the file's weight bytes.
ModelInfo model_info(const gguf::File& file, const std::string& arch, const BaseHparams& hp);

// An architecture's model: its hyperparameters, read first, and its weights, uploaded once
// LoadOptions::before_upload has seen info() and kv_layout(). The architecture adds kv_layout() and
// build_forward(), and its constructor calls load().
template <class Hparams, class Weights>
class ArchitectureModel : public Model {
public:
    const ModelInfo& info() const override { return info_; }

protected:
    using WeightsLoader = Weights (*)(gpu::Device& device, const gguf::File& file, const Hparams& hp,
                                      const LoadOptions& options);

    ArchitectureModel(gpu::Device& device, const gguf::File& file, const std::string& arch, Hparams hp)
        : device_(device), hp_(std::move(hp)), info_(model_info(file, arch, hp_)) {}

    void load(const gguf::File& file, const LoadOptions& options, WeightsLoader load_weights) {
        if (options.before_upload) options.before_upload(info_, kv_layout());
        w_ = load_weights(device_, file, hp_, options);
    }

    gpu::Device& device_;
    Hparams hp_;
    Weights w_;
    ModelInfo info_;
};

using MakeModel = std::unique_ptr<Model> (*)(gpu::Device& device, const gguf::File& file, const std::string& arch,
                                             const LoadOptions& options);
// The KV layout from the hyperparameters alone (model::kv_layout_from_metadata).
using KvLayoutFromMetadata = KvLayout (*)(const gguf::File& file, const std::string& arch);

// One row per general.architecture value (model.cpp).
struct Architecture {
    std::string_view name;
    MakeModel make;
    KvLayoutFromMetadata kv_layout;  // null: the architecture does not say without its weights
};

std::unique_ptr<Model> make_llama(gpu::Device& device, const gguf::File& file, const std::string& arch,
                                  const LoadOptions& options);  // llama and mistral3
KvLayout llama_kv_layout(const gguf::File& file, const std::string& arch);
std::unique_ptr<Model> make_gemma3(gpu::Device& device, const gguf::File& file, const std::string& arch,
                                   const LoadOptions& options);
KvLayout gemma3_kv_layout(const gguf::File& file, const std::string& arch);
std::unique_ptr<Model> make_mistral4(gpu::Device& device, const gguf::File& file, const std::string& arch,
                                     const LoadOptions& options);  // mistral4 and deepseek2
KvLayout mistral4_kv_layout(const gguf::File& file, const std::string& arch);
std::unique_ptr<Model> make_bert(gpu::Device& device, const gguf::File& file, const std::string& arch,
                                 const LoadOptions& options);
std::unique_ptr<Model> make_minimax_m3(gpu::Device& device, const gguf::File& file, const std::string& arch,
                                       const LoadOptions& options);

}  // namespace vkllm::model
