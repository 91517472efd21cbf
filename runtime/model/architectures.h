#pragma once
// One constructor per architecture file; model.cpp maps general.architecture to them.
#include <memory>
#include <string>

#include "model/model.h"

namespace vkllm::model {

using MakeModel = std::unique_ptr<Model> (*)(gpu::Device& device, const gguf::File& file, const std::string& arch,
                                             const LoadOptions& options);

std::unique_ptr<Model> make_llama(gpu::Device& device, const gguf::File& file, const std::string& arch,
                                  const LoadOptions& options);
std::unique_ptr<Model> make_minimax_m3(gpu::Device& device, const gguf::File& file, const std::string& arch,
                                       const LoadOptions& options);

}  // namespace vkllm::model
