#pragma once
// `vkllm quantize`: a GGUF re-encoded in another type with llama.cpp's per-tensor rules
// (type_rules.h), streaming tensor by tensor like the converter; metadata copied, file type updated.
#include <filesystem>

#include "convert/convert.h"

namespace vkllm::convert {

void quantize_file(const std::filesystem::path& input, const std::filesystem::path& output, OutputType type,
                   const Progress& progress);

}  // namespace vkllm::convert
