#pragma once
// One constructor per architecture file; model.cpp maps general.architecture to them.
#include <memory>
#include <string>

#include "model/hparams.h"
#include "model/model.h"

namespace vkllm::model {

// What every architecture reports of itself: names, sizes and the file's weight bytes.
ModelInfo model_info(const gguf::File& file, const std::string& arch, const BaseHparams& hp);

using MakeModel = std::unique_ptr<Model> (*)(gpu::Device& device, const gguf::File& file, const std::string& arch,
                                             const LoadOptions& options);

std::unique_ptr<Model> make_llama(gpu::Device& device, const gguf::File& file, const std::string& arch,
                                  const LoadOptions& options);
std::unique_ptr<Model> make_gemma3(gpu::Device& device, const gguf::File& file, const std::string& arch,
                                   const LoadOptions& options);
// Gemma 3's KV layout from the hyperparameters alone (no weights read).
KvLayout gemma3_kv_layout(const gguf::File& file, const std::string& arch);
std::unique_ptr<Model> make_mistral4(gpu::Device& device, const gguf::File& file, const std::string& arch,
                                     const LoadOptions& options);  // mistral4 and deepseek2

// The KV layout from the hyperparameters alone (model::kv_layout_from_metadata).
using KvLayoutFromMetadata = KvLayout (*)(const gguf::File& file, const std::string& arch);
KvLayout mistral4_kv_layout(const gguf::File& file, const std::string& arch);
std::unique_ptr<Model> make_minimax_m3(gpu::Device& device, const gguf::File& file, const std::string& arch,
                                       const LoadOptions& options);

}  // namespace vkllm::model
