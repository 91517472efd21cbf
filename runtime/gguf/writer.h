#pragma once
// GGUF v3 writer for tools and tests: metadata of every value type (arrays and nested arrays
// included) and tensors laid out in order, each padded to the alignment (key general.alignment,
// default 32), as ggml writes them.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "gguf/reader.h"

namespace vkllm::gguf {

class Writer {
public:
    explicit Writer(uint32_t version = 3);  // 2 or 3: the two differ only in the version field

    void add_u8(std::string_view key, uint8_t value);
    void add_i8(std::string_view key, int8_t value);
    void add_u16(std::string_view key, uint16_t value);
    void add_i16(std::string_view key, int16_t value);
    void add_u32(std::string_view key, uint32_t value);
    void add_i32(std::string_view key, int32_t value);
    void add_u64(std::string_view key, uint64_t value);
    void add_i64(std::string_view key, int64_t value);
    void add_f32(std::string_view key, float value);
    void add_f64(std::string_view key, double value);
    void add_bool(std::string_view key, bool value);
    void add_string(std::string_view key, std::string_view value);

    // An array of arithmetic elements; the element type follows T (bool arrays: add_value).
    template <class T>
    void add_array(std::string_view key, std::span<const T> values) {
        static_assert(std::is_arithmetic_v<T> && !std::is_same_v<T, bool>);
        add_scalar_array(key, value_type_of<T>(), std::as_bytes(values), values.size());
    }
    void add_string_array(std::string_view key, std::span<const std::string_view> values);
    void add_string_array(std::string_view key, std::span<const std::string> values);
    // Any value as the reader returns it, nested arrays included: copies metadata across files.
    void add_value(std::string_view key, const Value& value);

    // A tensor of shape ne (ggml order, 1 to 4 dims) whose data is exactly its nbytes; copied.
    void add_tensor(std::string_view name, GgmlType type, std::span<const uint64_t> ne,
                    std::span<const std::byte> data);

    // A tensor whose data write_streaming asks for when it gets there, so a converter holds one
    // tensor at a time; bytes() and write() refuse a writer with such tensors.
    void declare_tensor(std::string_view name, GgmlType type, std::span<const uint64_t> ne);

    std::vector<std::byte> bytes() const;
    void write(const std::filesystem::path& path) const;

    // Writes the file, asking source(index, sink) for each declared tensor's data, which it hands
    // to sink in pieces (in order, any number) that add up to exactly the tensor's nbytes.
    // Tensors added with data are written as they are.
    using TensorSink = std::function<void(std::span<const std::byte>)>;
    using TensorSource = std::function<void(size_t index, const TensorSink& sink)>;
    void write_streaming(const std::filesystem::path& path, const TensorSource& source) const;

private:
    struct Entry {
        std::string key;
        std::vector<std::byte> encoded;  // value type id, then the value
    };
    struct TensorEntry {
        std::string name;
        GgmlType type;
        std::vector<uint64_t> ne;
        uint64_t nbytes;
        bool declared;                // data comes from write_streaming's source
        std::vector<std::byte> data;  // empty for a declared tensor
    };

    template <class T>
    static constexpr ValueType value_type_of() {
        if constexpr (std::is_same_v<T, uint8_t>) return ValueType::U8;
        else if constexpr (std::is_same_v<T, int8_t>) return ValueType::I8;
        else if constexpr (std::is_same_v<T, uint16_t>) return ValueType::U16;
        else if constexpr (std::is_same_v<T, int16_t>) return ValueType::I16;
        else if constexpr (std::is_same_v<T, uint32_t>) return ValueType::U32;
        else if constexpr (std::is_same_v<T, int32_t>) return ValueType::I32;
        else if constexpr (std::is_same_v<T, uint64_t>) return ValueType::U64;
        else if constexpr (std::is_same_v<T, int64_t>) return ValueType::I64;
        else if constexpr (std::is_same_v<T, float>) return ValueType::F32;
        else {
            static_assert(std::is_same_v<T, double>, "no GGUF value type for this element type");
            return ValueType::F64;
        }
    }

    void add_entry(std::string_view key, std::vector<std::byte> encoded);
    void add_scalar(std::string_view key, ValueType type, const void* value, size_t size);
    void add_scalar_array(std::string_view key, ValueType type, std::span<const std::byte> elements, uint64_t count);
    uint64_t alignment() const;
    uint64_t checked_nbytes(std::string_view name, GgmlType type, std::span<const uint64_t> ne) const;
    std::vector<std::byte> header_bytes() const;  // up to the padded start of the tensor data

    uint32_t version_;
    std::vector<Entry> entries_;
    std::vector<TensorEntry> tensors_;
};

}  // namespace vkllm::gguf
