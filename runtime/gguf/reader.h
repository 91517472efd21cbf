#pragma once
// GGUF reader (v2 and v3; model-notes.md A.1). The file is memory-mapped read-only and checked
// completely at open: every count, length, dimension and offset is validated against the file
// before use, so a damaged or hostile file throws one vkllm::Error and never reads out of bounds.
// Keys, strings and tensor data are views into the mapping and live as long as the File.
#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gguf/types.h"

namespace vkllm::gguf {

// Metadata value types (gguf.h `enum gguf_type`).
enum class ValueType : uint32_t {
    U8 = 0,
    I8 = 1,
    U16 = 2,
    I16 = 3,
    U32 = 4,
    I32 = 5,
    F32 = 6,
    Bool = 7,
    String = 8,
    Array = 9,
    U64 = 10,
    I64 = 11,
    F64 = 12,
};

std::string_view value_type_name(ValueType type);  // "u32", "string", "array"...

// A string from a file made safe for a one-line message: control bytes escaped (\n, \x01),
// cut after max_chars with "...".
std::string printable(std::string_view text, size_t max_chars = 64);

// One metadata value. Scalars are decoded; arrays of fixed-size scalars stay as their
// little-endian bytes in the mapping (a vocabulary's scores are not copied), and item(i) decodes one.
struct Value {
    ValueType type = ValueType::U8;
    uint64_t offset = 0;  // byte offset of the value in its file, for error messages

    // Scalars: exactly one of these holds the value, by kind of type.
    uint64_t unsigned_value = 0;  // U8, U16, U32, U64, Bool (0 or 1)
    int64_t signed_value = 0;     // I8, I16, I32, I64
    double float_value = 0;       // F32 (exactly widened), F64
    std::string_view string;      // String

    // Arrays.
    ValueType element_type = ValueType::U8;
    uint64_t count = 0;
    std::span<const std::byte> scalars;    // elements of a fixed-size element type, packed
    std::vector<std::string_view> strings;  // elements of an array of strings
    std::vector<Value> arrays;              // elements of an array of arrays

    bool is_integer() const;  // any of U8..I64 (not Bool)
    bool is_float() const { return type == ValueType::F32 || type == ValueType::F64; }
    // Element i of an array as a Value of its element type (scalar or string).
    Value item(uint64_t i) const;
};

struct KeyValue {
    std::string_view key;
    Value value;
};

struct Tensor {
    std::string_view name;
    GgmlType type = GgmlType::F32;
    uint32_t n_dims = 0;
    std::array<uint64_t, 4> ne = {1, 1, 1, 1};  // ggml order: ne[0] is contiguous; unused dims are 1
    uint32_t part = 0;                          // index of the split file holding it
    uint64_t offset = 0;                        // absolute byte offset in that file
    uint64_t nbytes = 0;
    std::span<const std::byte> data;            // nbytes of the mapping, offset-aligned

    uint64_t n_elements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
    uint64_t n_rows() const { return ne[1] * ne[2] * ne[3]; }
    uint64_t row_bytes() const { return gguf::row_bytes(type, ne[0]); }
    std::string shape_string() const;  // "4096 x 32000"
};

class Mapping;  // the bytes of one part: a read-only mmap, the file read into memory, or an owned buffer
struct Part;    // one parsed part, before the parts are joined

// How File::open holds a file: mapped (pages read on first touch, shared with the page cache), or
// read whole into the process's memory at open (--no-mmap: for file systems where mapping is slow).
enum class ReadMode { Map, Read };

class File {
public:
    // Opens and validates a GGUF file. For a split model name the first part
    // (`name-00001-of-00003.gguf`): the other parts are found next to it and opened too; metadata
    // comes from the first part, tensors from all.
    static File open(const std::filesystem::path& path, ReadMode mode = ReadMode::Map);
    // Parses a file image held in memory (the fuzzer's path); `name` stands for the file in errors.
    // A part of a split model is read on its own.
    static File from_bytes(std::vector<std::byte> bytes, std::string name = "<memory>");

    File(File&&) noexcept;
    File& operator=(File&&) noexcept;
    ~File();

    const std::string& name() const { return name_; }  // the path as given, for messages
    uint32_t version() const { return version_; }
    uint64_t alignment() const { return alignment_; }
    size_t n_parts() const { return parts_.size(); }
    uint64_t part_size(size_t part) const;
    uint64_t data_offset(size_t part) const;  // start of that part's tensor data section
    // The tensor's bytes were copied where they are needed (uploaded): the whole pages they hold
    // leave the process's memory and the page cache. Its data still reads the same, from the file
    // again, so only a tensor that is not read again should be released. A file from bytes keeps them.
    void release(const Tensor& tensor) const;

    // Metadata in file order, and lookup by key (nullptr when absent).
    std::span<const KeyValue> metadata() const { return metadata_; }
    const Value* find(std::string_view key) const;

    // Typed getters: nullopt when the key is absent; a vkllm::Error naming the key, its type and
    // offset when present with a type that cannot hold the requested one. Integers convert from
    // any integer type whose value fits; floats from F32 or F64 (get_f32 from F32 only).
    std::optional<uint64_t> get_u64(std::string_view key) const;
    std::optional<int64_t> get_i64(std::string_view key) const;
    std::optional<uint32_t> get_u32(std::string_view key) const;
    std::optional<int32_t> get_i32(std::string_view key) const;
    std::optional<float> get_f32(std::string_view key) const;
    std::optional<double> get_f64(std::string_view key) const;
    std::optional<bool> get_bool(std::string_view key) const;
    std::optional<std::string_view> get_string(std::string_view key) const;

    // Typed arrays, same rules per element. Strings are views into the mapping.
    std::optional<std::span<const std::string_view>> get_string_array(std::string_view key) const;
    std::optional<std::vector<float>> get_f32_array(std::string_view key) const;
    std::optional<std::vector<int32_t>> get_i32_array(std::string_view key) const;
    std::optional<std::vector<uint32_t>> get_u32_array(std::string_view key) const;

    // Tensors of all parts in file order, and lookup by name.
    std::span<const Tensor> tensors() const { return tensors_; }
    const Tensor* find_tensor(std::string_view name) const;
    const Tensor& tensor(std::string_view name) const;  // throws naming the tensor when absent

    // Throws naming the tensor and its type unless vkllm runs that type (types.h runs_on_vkllm).
    void require_supported(const Tensor& tensor) const;

private:
    File();
    void join(std::vector<Part>& parts);  // metadata from the first part, tensors from all

    std::string name_;
    uint32_t version_ = 0;
    uint64_t alignment_ = 32;
    std::vector<std::unique_ptr<Mapping>> parts_;
    std::vector<std::string> part_names_;
    std::vector<uint64_t> data_offsets_;
    std::vector<KeyValue> metadata_;
    std::unordered_map<std::string_view, size_t> key_index_;
    std::vector<Tensor> tensors_;
    std::unordered_map<std::string_view, size_t> tensor_index_;
};

}  // namespace vkllm::gguf
