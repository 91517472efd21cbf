// Metadata values: decoding, integer conversion, and how they and file strings are named in messages.
#include "gguf/value.h"

#include <fmt/format.h>

#include "core/error.h"

namespace vkllm::gguf {

uint64_t scalar_size(ValueType type) {
    switch (type) {
        case ValueType::U8: case ValueType::I8: case ValueType::Bool: return 1;
        case ValueType::U16: case ValueType::I16: return 2;
        case ValueType::U32: case ValueType::I32: case ValueType::F32: return 4;
        case ValueType::U64: case ValueType::I64: case ValueType::F64: return 8;
        case ValueType::String: case ValueType::Array: return 0;
    }
    return 0;
}

Value decode_scalar(ValueType type, const std::byte* p, uint64_t offset) {
    Value v;
    v.type = type;
    v.offset = offset;
    switch (type) {
        case ValueType::U8: v.unsigned_value = load_le<uint8_t>(p); break;
        case ValueType::U16: v.unsigned_value = load_le<uint16_t>(p); break;
        case ValueType::U32: v.unsigned_value = load_le<uint32_t>(p); break;
        case ValueType::U64: v.unsigned_value = load_le<uint64_t>(p); break;
        case ValueType::Bool: v.unsigned_value = load_le<uint8_t>(p); break;
        case ValueType::I8: v.signed_value = load_le<int8_t>(p); break;
        case ValueType::I16: v.signed_value = load_le<int16_t>(p); break;
        case ValueType::I32: v.signed_value = load_le<int32_t>(p); break;
        case ValueType::I64: v.signed_value = load_le<int64_t>(p); break;
        case ValueType::F32: v.float_value = load_le<float>(p); break;
        case ValueType::F64: v.float_value = load_le<double>(p); break;
        case ValueType::String: case ValueType::Array: break;
    }
    return v;
}

bool is_integer_type(ValueType type) {
    return scalar_size(type) > 0 && type != ValueType::Bool && type != ValueType::F32 && type != ValueType::F64;
}

bool is_signed(ValueType type) {
    return type == ValueType::I8 || type == ValueType::I16 || type == ValueType::I32 || type == ValueType::I64;
}

std::string integer_string(const Value& v) {
    return is_signed(v.type) ? std::to_string(v.signed_value) : std::to_string(v.unsigned_value);
}

std::string describe_type(const Value& v) {
    if (v.type != ValueType::Array) return std::string(value_type_name(v.type));
    return fmt::format("array of {}", value_type_name(v.element_type));
}

bool Value::is_integer() const { return is_integer_type(type); }

Value Value::item(uint64_t i) const {
    if (type != ValueType::Array || i >= count) fail("metadata array index {} is out of range ({} items)", i, count);
    if (element_type == ValueType::Array) return arrays[i];
    if (element_type == ValueType::String) {
        Value v;
        v.type = ValueType::String;
        v.string = strings[i];
        return v;
    }
    const uint64_t size = scalar_size(element_type);
    return decode_scalar(element_type, scalars.data() + i * size, offset);
}

std::string_view value_type_name(ValueType type) {
    constexpr std::string_view names[] = {"u8",  "i8",     "u16",   "i16", "u32", "i32", "f32",
                                          "bool", "string", "array", "u64", "i64", "f64"};
    return uint32_t(type) < std::size(names) ? names[uint32_t(type)] : "unknown";
}

std::string printable(std::string_view text, size_t max_chars) {
    std::string out;
    for (size_t i = 0; i < text.size() && i < max_chars; ++i) {
        const unsigned char c = static_cast<unsigned char>(text[i]);
        if (c == '\n') out += "\\n";
        else if (c == '\t') out += "\\t";
        else if (c < 0x20 || c == 0x7F) out += fmt::format("\\x{:02x}", c);
        else out += char(c);
    }
    if (text.size() > max_chars) out += "...";
    return out;
}

std::string Tensor::shape_string() const {
    std::string out = std::to_string(ne[0]);
    for (uint32_t d = 1; d < n_dims; ++d) out += fmt::format(" x {}", ne[d]);
    return out;
}

}  // namespace vkllm::gguf
