#pragma once
// Decoding and converting metadata values, shared by the parser and File's typed getters.
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <utility>

#include "gguf/reader.h"

namespace vkllm::gguf {

uint64_t scalar_size(ValueType type);  // bytes of a fixed-size value; 0 for strings and arrays
bool is_integer_type(ValueType type);  // U8..I64, not Bool
bool is_signed(ValueType type);
Value decode_scalar(ValueType type, const std::byte* p, uint64_t offset);  // from little-endian bytes
std::string integer_string(const Value& v);
std::string describe_type(const Value& v);  // "u32", "array of string"

template <class T>
T load_le(const std::byte* p) {
    T value;
    std::memcpy(&value, p, sizeof(T));
    return value;
}

// An integer value converted to T when it fits, else nullopt.
template <class T>
std::optional<T> integer_as(const Value& v) {
    if (is_signed(v.type)) {
        if (!std::in_range<T>(v.signed_value)) return std::nullopt;
        return T(v.signed_value);
    }
    if (!std::in_range<T>(v.unsigned_value)) return std::nullopt;
    return T(v.unsigned_value);
}

}  // namespace vkllm::gguf
