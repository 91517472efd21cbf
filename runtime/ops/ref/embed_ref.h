#pragma once
// Reference embedding lookup: rows of a weight in any type with a reference dequantizer.
#include <cstddef>
#include <cstdint>
#include <span>

#include "gguf/types.h"

namespace vkllm::ref {

// out [ids.size()][n_cols] = dequantized rows ids[t] of `weight` (rows of n_cols elements);
// an id outside the weight gives a row of zeros.
void get_rows(gguf::GgmlType type, std::span<const std::byte> weight, uint32_t n_cols,
              std::span<const int32_t> ids, std::span<float> out);

}  // namespace vkllm::ref
