#pragma once
// Checks that a converted GGUF equals llama.cpp's: values compared bit for bit, tensors byte for byte.
#include <initializer_list>
#include <string_view>

#include "gguf/reader.h"

namespace vkllm::test {

bool same_value(const gguf::Value& a, const gguf::Value& b);

// Every key of `want` but the `skipped` ones is in `got` with the same value (any order).
void check_same_keys(const gguf::File& got, const gguf::File& want, std::initializer_list<std::string_view> skipped = {});

// The same tensors: names, types, shapes and bytes.
void check_same_tensors(const gguf::File& got, const gguf::File& want);

}  // namespace vkllm::test
