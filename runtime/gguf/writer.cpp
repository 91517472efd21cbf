// GGUF v3 writer (layout: model-notes.md A.1).
#include "gguf/writer.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <fstream>

#include "core/error.h"

namespace vkllm::gguf {

namespace {

void put_bytes(std::vector<std::byte>& out, const void* data, size_t size) {
    if (size == 0) return;
    const size_t at = out.size();
    out.resize(at + size);
    std::memcpy(out.data() + at, data, size);
}

template <class T>
void put(std::vector<std::byte>& out, T value) {
    put_bytes(out, &value, sizeof(T));
}

void put_string(std::vector<std::byte>& out, std::string_view s) {
    put<uint64_t>(out, s.size());
    put_bytes(out, s.data(), s.size());
}

void pad_to(std::vector<std::byte>& out, uint64_t alignment) {
    out.resize(out.size() + (alignment - out.size() % alignment) % alignment, std::byte{0});
}

// The payload of a value (without its type id), as the reader decoded it.
void put_value(std::vector<std::byte>& out, const Value& v) {
    switch (v.type) {
        case ValueType::U8: put<uint8_t>(out, uint8_t(v.unsigned_value)); break;
        case ValueType::U16: put<uint16_t>(out, uint16_t(v.unsigned_value)); break;
        case ValueType::U32: put<uint32_t>(out, uint32_t(v.unsigned_value)); break;
        case ValueType::U64: put<uint64_t>(out, v.unsigned_value); break;
        case ValueType::Bool: put<uint8_t>(out, uint8_t(v.unsigned_value)); break;
        case ValueType::I8: put<int8_t>(out, int8_t(v.signed_value)); break;
        case ValueType::I16: put<int16_t>(out, int16_t(v.signed_value)); break;
        case ValueType::I32: put<int32_t>(out, int32_t(v.signed_value)); break;
        case ValueType::I64: put<int64_t>(out, v.signed_value); break;
        case ValueType::F32: put<float>(out, float(v.float_value)); break;
        case ValueType::F64: put<double>(out, v.float_value); break;
        case ValueType::String: put_string(out, v.string); break;
        case ValueType::Array:
            put<uint32_t>(out, uint32_t(v.element_type));
            put<uint64_t>(out, v.count);
            if (v.element_type == ValueType::String)
                for (std::string_view s : v.strings) put_string(out, s);
            else if (v.element_type == ValueType::Array)
                for (const Value& item : v.arrays) put_value(out, item);
            else
                put_bytes(out, v.scalars.data(), v.scalars.size());
            break;
    }
}

}  // namespace

Writer::Writer(uint32_t version) : version_(version) {
    if (version != 2 && version != 3) fail("gguf writer: version {} is not 2 or 3", version);
}

void Writer::add_entry(std::string_view key, std::vector<std::byte> encoded) {
    if (key.empty()) fail("gguf writer: a metadata key is empty");
    for (const Entry& entry : entries_)
        if (entry.key == key) fail("gguf writer: key '{}' is added twice", key);
    entries_.push_back({std::string(key), std::move(encoded)});
}

void Writer::add_scalar(std::string_view key, ValueType type, const void* value, size_t size) {
    std::vector<std::byte> encoded;
    put<uint32_t>(encoded, uint32_t(type));
    put_bytes(encoded, value, size);
    add_entry(key, std::move(encoded));
}

void Writer::add_u8(std::string_view key, uint8_t value) { add_scalar(key, ValueType::U8, &value, 1); }
void Writer::add_i8(std::string_view key, int8_t value) { add_scalar(key, ValueType::I8, &value, 1); }
void Writer::add_u16(std::string_view key, uint16_t value) { add_scalar(key, ValueType::U16, &value, 2); }
void Writer::add_i16(std::string_view key, int16_t value) { add_scalar(key, ValueType::I16, &value, 2); }
void Writer::add_u32(std::string_view key, uint32_t value) { add_scalar(key, ValueType::U32, &value, 4); }
void Writer::add_i32(std::string_view key, int32_t value) { add_scalar(key, ValueType::I32, &value, 4); }
void Writer::add_u64(std::string_view key, uint64_t value) { add_scalar(key, ValueType::U64, &value, 8); }
void Writer::add_i64(std::string_view key, int64_t value) { add_scalar(key, ValueType::I64, &value, 8); }
void Writer::add_f32(std::string_view key, float value) { add_scalar(key, ValueType::F32, &value, 4); }
void Writer::add_f64(std::string_view key, double value) { add_scalar(key, ValueType::F64, &value, 8); }

void Writer::add_bool(std::string_view key, bool value) {
    const uint8_t byte = value ? 1 : 0;
    add_scalar(key, ValueType::Bool, &byte, 1);
}

void Writer::add_string(std::string_view key, std::string_view value) {
    std::vector<std::byte> encoded;
    put<uint32_t>(encoded, uint32_t(ValueType::String));
    put_string(encoded, value);
    add_entry(key, std::move(encoded));
}

void Writer::add_scalar_array(std::string_view key, ValueType type, std::span<const std::byte> elements,
                              uint64_t count) {
    std::vector<std::byte> encoded;
    put<uint32_t>(encoded, uint32_t(ValueType::Array));
    put<uint32_t>(encoded, uint32_t(type));
    put<uint64_t>(encoded, count);
    put_bytes(encoded, elements.data(), elements.size());
    add_entry(key, std::move(encoded));
}

void Writer::add_string_array(std::string_view key, std::span<const std::string_view> values) {
    std::vector<std::byte> encoded;
    put<uint32_t>(encoded, uint32_t(ValueType::Array));
    put<uint32_t>(encoded, uint32_t(ValueType::String));
    put<uint64_t>(encoded, values.size());
    for (std::string_view s : values) put_string(encoded, s);
    add_entry(key, std::move(encoded));
}

void Writer::add_string_array(std::string_view key, std::span<const std::string> values) {
    const std::vector<std::string_view> views(values.begin(), values.end());
    add_string_array(key, std::span<const std::string_view>(views));
}

void Writer::add_value(std::string_view key, const Value& value) {
    std::vector<std::byte> encoded;
    put<uint32_t>(encoded, uint32_t(value.type));
    put_value(encoded, value);
    add_entry(key, std::move(encoded));
}

uint64_t Writer::checked_nbytes(std::string_view name, GgmlType type, std::span<const uint64_t> ne) const {
    if (name.empty() || name.size() > 63) fail("gguf writer: tensor name '{}' is not 1 to 63 bytes", name);
    for (const TensorEntry& t : tensors_)
        if (t.name == name) fail("gguf writer: tensor '{}' is added twice", name);
    if (ne.empty() || ne.size() > 4) fail("gguf writer: tensor '{}' has {} dimensions, not 1 to 4", name, ne.size());
    if (ne[0] % block_size(type) != 0)
        fail("gguf writer: tensor '{}': ne[0] = {} is not a multiple of the {} block size {}", name, ne[0],
             type_name(type), block_size(type));
    uint64_t nbytes = row_bytes(type, ne[0]);
    for (size_t d = 1; d < ne.size(); ++d) nbytes *= ne[d];
    return nbytes;
}

void Writer::add_tensor(std::string_view name, GgmlType type, std::span<const uint64_t> ne,
                        std::span<const std::byte> data) {
    const uint64_t nbytes = checked_nbytes(name, type, ne);
    if (data.size() != nbytes)
        fail("gguf writer: tensor '{}' needs {} bytes of {} data, got {}", name, nbytes, type_name(type), data.size());
    tensors_.push_back({std::string(name), type, {ne.begin(), ne.end()}, nbytes, false, {data.begin(), data.end()}});
}

void Writer::declare_tensor(std::string_view name, GgmlType type, std::span<const uint64_t> ne) {
    const uint64_t nbytes = checked_nbytes(name, type, ne);
    tensors_.push_back({std::string(name), type, {ne.begin(), ne.end()}, nbytes, true, {}});
}

uint64_t Writer::alignment() const {
    for (const Entry& entry : entries_) {
        if (entry.key != "general.alignment") continue;
        uint32_t type = 0, value = 0;
        std::memcpy(&type, entry.encoded.data(), 4);
        if (type != uint32_t(ValueType::U32)) fail("gguf writer: key 'general.alignment' must be u32");
        std::memcpy(&value, entry.encoded.data() + 4, 4);
        if (!std::has_single_bit(value)) fail("gguf writer: alignment {} is not a power of two", value);
        return value;
    }
    return 32;
}

std::vector<std::byte> Writer::header_bytes() const {
    const uint64_t align = alignment();
    std::vector<std::byte> out;
    put_bytes(out, "GGUF", 4);
    put<uint32_t>(out, version_);
    put<int64_t>(out, int64_t(tensors_.size()));
    put<int64_t>(out, int64_t(entries_.size()));
    for (const Entry& entry : entries_) {
        put_string(out, entry.key);
        put_bytes(out, entry.encoded.data(), entry.encoded.size());
    }
    uint64_t offset = 0;
    for (const TensorEntry& t : tensors_) {
        put_string(out, t.name);
        put<uint32_t>(out, uint32_t(t.ne.size()));
        for (uint64_t n : t.ne) put<int64_t>(out, int64_t(n));
        put<uint32_t>(out, uint32_t(t.type));
        put<uint64_t>(out, offset);
        offset += t.nbytes + (align - t.nbytes % align) % align;
    }
    if (!tensors_.empty()) pad_to(out, align);
    return out;
}

std::vector<std::byte> Writer::bytes() const {
    const uint64_t align = alignment();
    std::vector<std::byte> out = header_bytes();
    for (const TensorEntry& t : tensors_) {
        if (t.declared) fail("gguf writer: tensor '{}' was declared without data: use write_streaming", t.name);
        put_bytes(out, t.data.data(), t.data.size());
        pad_to(out, align);
    }
    return out;
}

void Writer::write(const std::filesystem::path& path) const {
    write_streaming(path, [this](size_t i, const TensorSink&) {
        fail("gguf writer: tensor '{}' was declared without data: use write_streaming", tensors_[i].name);
    });
}

void Writer::write_streaming(const std::filesystem::path& path, const TensorSource& source) const {
    const uint64_t align = alignment();
    std::ofstream file(path, std::ios::binary | std::ios::trunc);
    const auto put_file = [&](std::span<const std::byte> data) {
        file.write(reinterpret_cast<const char*>(data.data()), std::streamsize(data.size()));
    };
    put_file(header_bytes());
    const std::byte zeros[256] = {};  // padding is written in pieces: the alignment may exceed 256
    for (size_t i = 0; i < tensors_.size(); ++i) {
        const TensorEntry& t = tensors_[i];
        if (!t.declared) {
            put_file(t.data);
        } else {
            uint64_t written = 0;
            source(i, [&](std::span<const std::byte> piece) {
                if (piece.size() > t.nbytes - written)
                    fail("gguf writer: tensor '{}' got more than its {} bytes of {} data", t.name, t.nbytes,
                         type_name(t.type));
                put_file(piece);
                written += piece.size();
            });
            if (written != t.nbytes)
                fail("gguf writer: tensor '{}' needs {} bytes of {} data, got {}", t.name, t.nbytes,
                     type_name(t.type), written);
        }
        for (uint64_t pad = (align - t.nbytes % align) % align; pad > 0;) {
            const uint64_t n = std::min<uint64_t>(pad, sizeof zeros);
            put_file(std::span(zeros, n));
            pad -= n;
        }
    }
    file.close();
    if (!file) fail("{}: cannot write the GGUF file", path.string());
}

}  // namespace vkllm::gguf
