#pragma once
// Parsing and validating one GGUF file image: one file, or one part of a split model.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gguf/reader.h"

namespace vkllm::gguf {

// The contents of one part, before parts are joined. Tensor offsets are absolute in the part.
struct Part {
    uint32_t version = 0;
    uint64_t alignment = 32;  // GGUF's default, unless key general.alignment says otherwise
    uint64_t data_offset = 0;
    std::vector<KeyValue> metadata;
    std::unordered_map<std::string_view, size_t> key_index;
    std::vector<Tensor> tensors;
};

// Throws vkllm::Error naming `file`, the key or tensor and the byte offset of the first defect.
Part parse_part(std::span<const std::byte> bytes, const std::string& file, uint32_t part_index);

}  // namespace vkllm::gguf
