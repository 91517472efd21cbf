#pragma once
// What an architecture's mapping hands the converter: the GGUF metadata of one output file and,
// for every output tensor, its GGUF name, ggml shape and a function producing any run of its rows
// as f32 straight from the memory-mapped checkpoint, so the converter holds one chunk at a time.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "convert/hf_config.h"
#include "convert/safetensors.h"
#include "gguf/writer.h"

namespace vkllm::convert {

// Writes rows [first, first + out.size() / ne[0]) of the tensor, in ggml order, into out.
using RowSource = std::function<void(uint64_t first, std::span<float> out)>;

struct PlannedTensor {
    std::string name;          // GGUF name
    std::vector<uint64_t> ne;  // ggml order: ne[0] is a row
    RowSource rows;
    // A tensor already stored in some type (re-quantizing a GGUF): written byte for byte when it
    // is to keep that type.
    std::optional<gguf::GgmlType> stored_type;
    std::span<const std::byte> stored_data;
    // A type the mapping fixes whatever the output type (llama.cpp's `tensor_force_quant`).
    std::optional<gguf::GgmlType> forced_type;

    uint64_t n_elements() const;
    uint64_t n_rows() const { return n_elements() / ne[0]; }
};

struct Plan {
    gguf::Writer metadata;  // every key but general.file_type, which write_plan adds
    std::string type = "model";  // general.type: "model" or "mmproj"
    std::vector<PlannedTensor> tensors;
};

// What a mapping reads: the checkpoint folder, its config and its tensors.
struct Source {
    std::filesystem::path dir;
    HfConfig config;
    Checkpoint checkpoint;
};

// Row sources over one checkpoint tensor (checked: the output shape must hold its elements).
// ggml shape of a PyTorch tensor: the reverse of its shape.
std::vector<uint64_t> ggml_shape(const SafeTensor& t);
// The tensor as it is.
RowSource copy_rows(const SafeTensor& t);
// The tensor plus one, for norms stored as an offset from one (Gemma's RMSNorm weights).
RowSource plus_one_rows(const SafeTensor& t);
// llama.cpp's Q/K permutation for adjacent-pair RoPE: within each of n_head heads, the rows
// [first half | second half] become interleaved (reshape [n_head, 2, hd/2, cols], swap axes 1, 2).
RowSource rope_permuted_rows(const SafeTensor& t, uint64_t n_head);

// Decodes count elements starting at element `first` of t into f32 (F8_E4M3 without scaling).
void decode(const SafeTensor& t, uint64_t first, std::span<float> out);

}  // namespace vkllm::convert
