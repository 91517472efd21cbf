#pragma once
// Which ggml type each tensor gets for a requested output type, as llama.cpp decides it
// (convert_hf_to_gguf.py `prepare_tensors` for float and Q8_0 output; llama-quant.cpp
// `llama_tensor_get_type` for Q4_0 and the K-quants, q4_k meaning its Q4_K_M mix).
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "gguf/types.h"

namespace vkllm::convert {

enum class OutputType { F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K };

std::optional<OutputType> parse_output_type(std::string_view name);  // "f32" ... "q6_k"
std::string_view output_type_name(OutputType type);
uint32_t file_type(OutputType type);  // general.file_type (llama.h `llama_ftype`)

// The type of tensor `name` (GGUF name, ggml shape ne) in a file of `n_layer` blocks; `tied_output`:
// the file has no output.weight, so token_embd.weight is the output too and takes its type.
// Norms, biases, routers and 1-D tensors stay F32; a type whose block does not divide ne[0] falls
// back as llama.cpp does (Q4_K -> Q5_0, Q6_K -> Q8_0, then F16).
gguf::GgmlType tensor_type(OutputType type, std::string_view name, std::span<const uint64_t> ne, uint32_t n_layer,
                           bool tied_output);

}  // namespace vkllm::convert
