#pragma once
// Hugging Face checkpoint -> GGUF, streaming tensor by tensor: each output tensor is produced in
// chunks of rows straight from the memory-mapped safetensors, encoded, and written, so memory stays
// at a few chunks whatever the model size. The output is written to OUT.part and renamed at the end:
// a failure leaves no partial file.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

#include "convert/plan.h"
#include "convert/type_rules.h"

namespace vkllm::convert {

// Called before each tensor is written: parameters written so far of all, and the tensor's line.
using Progress = std::function<void(uint64_t done, uint64_t total, std::string_view tensor)>;

struct ConvertOptions {
    std::filesystem::path hf_dir;
    std::filesystem::path output;  // the text model
    std::filesystem::path mmproj;  // the vision encoder; empty for none
    OutputType type = OutputType::F16;
    Progress progress;  // may be empty
};

void convert(const ConvertOptions& options);

// Writes one planned file: the plan's keys plus general.file_type, every tensor in the type
// tensor_type() picks; after_tensor (if given) runs after each tensor is written.
void write_plan(const Plan& plan, const std::filesystem::path& output, OutputType type, const Progress& progress,
                const std::function<void()>& after_tensor = {});

// llama.cpp's general.size_label for a parameter count ("336K", "24B"; gguf-py
// `model_weight_count_rounded_notation`), and general.name for a folder without a model card.
std::string size_label(uint64_t n_params);
std::string name_from_folder(const std::filesystem::path& dir);

}  // namespace vkllm::convert
