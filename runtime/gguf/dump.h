#pragma once
// A readable listing of a GGUF file, as `vkllm info` prints it (in the manner of gguf-dump):
// header, metadata (long arrays and strings summarized), the tensor table and totals.
#include <cstddef>
#include <string>

#include "gguf/reader.h"

namespace vkllm::gguf {

struct DumpOptions {
    size_t array_items = 8;     // items shown of each array
    size_t string_chars = 80;   // characters shown of each string
};

std::string format_value(const Value& value, const DumpOptions& options = {});
std::string dump(const File& file, const DumpOptions& options = {});

}  // namespace vkllm::gguf
