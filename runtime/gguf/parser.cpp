// GGUF parsing and validation (model-notes.md A.1). Every read goes through Cursor, which checks
// the bytes exist before touching them; every count is checked against the bytes left before
// anything is allocated for it.
#include "gguf/parser.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <fmt/format.h>
#include <limits>

#include "core/error.h"
#include "gguf/value.h"

static_assert(std::endian::native == std::endian::little, "GGUF is read by memcpy of little-endian fields");

namespace vkllm::gguf {

namespace {

constexpr size_t max_name_bytes = 63;  // ggml's GGML_MAX_NAME (64) including the NUL
// Arrays of arrays (which ggml refuses outright) are bounded in depth, so a hostile file cannot
// exhaust the stack, and in items, since each decoded item takes ten times its encoded size.
constexpr int max_array_depth = 8;
constexpr uint64_t max_nested_items = 1 << 16;
// Smallest encodings, used to bound counts by the bytes left before reserving anything.
constexpr uint64_t min_kv_bytes = 8 + 1 + 4 + 1;         // key length, 1-byte key, type, u8 value
constexpr uint64_t min_tensor_info_bytes = 8 + 1 + 4 + 4 + 8;  // name length, name, n_dims, type, offset
constexpr uint64_t min_string_bytes = 8;
constexpr uint64_t min_array_bytes = 4 + 8;

uint64_t align_up(uint64_t offset, uint64_t alignment) {
    return offset + (alignment - offset % alignment) % alignment;
}

// Reads little-endian fields from one part, failing with the file, the context (a key or tensor)
// and the byte offset when the bytes are not there.
class Cursor {
public:
    Cursor(std::span<const std::byte> bytes, const std::string& file) : bytes_(bytes), file_(file) {}

    uint64_t offset() const { return offset_; }
    uint64_t remaining() const { return bytes_.size() - offset_; }
    const std::string& file() const { return file_; }
    void set_context(std::string context) { context_ = std::move(context); }

    template <class... Args>
    [[noreturn]] void fail_at(uint64_t offset, fmt::format_string<Args...> fmt, Args&&... args) const {
        const std::string what = fmt::format(fmt, std::forward<Args>(args)...);
        if (context_.empty()) fail("{}: {} at offset {:#x}", file_, what, offset);
        fail("{}: {}: {} at offset {:#x}", file_, context_, what, offset);
    }

    std::span<const std::byte> take(uint64_t n, const char* what) {
        if (n > remaining())
            fail_at(offset_, "{} of {} bytes runs past the end of the file ({} bytes)", what, n, bytes_.size());
        const std::span<const std::byte> out = bytes_.subspan(offset_, n);
        offset_ += n;
        return out;
    }

    template <class T>
    T read(const char* what) {
        return load_le<T>(take(sizeof(T), what).data());
    }

    std::string_view read_string(const char* what) {
        const uint64_t at = offset_;
        const uint64_t length = read<uint64_t>(what);
        if (length > remaining())
            fail_at(at, "{} length {} runs past the end of the file ({} bytes)", what, length, bytes_.size());
        const std::span<const std::byte> text = take(length, what);
        return {reinterpret_cast<const char*>(text.data()), text.size()};
    }

    // Fails unless `count` items of at least `min_bytes` each can fit in the bytes left.
    void check_count(uint64_t count, uint64_t min_bytes, uint64_t at, const char* what) const {
        if (count > remaining() / min_bytes)
            fail_at(at, "{} {} cannot fit in the {} bytes left in the file", what, count, remaining());
    }

    // Counts items of arrays of arrays against max_nested_items.
    void count_nested(uint64_t count, uint64_t at) {
        nested_items_ += count;
        if (nested_items_ > max_nested_items)
            fail_at(at, "arrays of arrays hold more than {} items in all", max_nested_items);
    }

private:
    std::span<const std::byte> bytes_;
    const std::string& file_;
    std::string context_;
    uint64_t offset_ = 0;
    uint64_t nested_items_ = 0;
};

ValueType read_value_type(Cursor& in, const char* what) {
    const uint64_t at = in.offset();
    const uint32_t id = in.read<uint32_t>(what);
    if (id > uint32_t(ValueType::F64)) in.fail_at(at, "unknown {} {}", what, id);
    return ValueType(id);
}

Value read_value(Cursor& in, ValueType type, int depth);

Value read_array(Cursor& in, int depth) {
    Value v;
    v.type = ValueType::Array;
    v.offset = in.offset();
    if (depth >= max_array_depth) in.fail_at(v.offset, "arrays nested deeper than {}", max_array_depth);
    v.element_type = read_value_type(in, "array element type");
    const uint64_t count_at = in.offset();
    v.count = in.read<uint64_t>("array length");
    if (const uint64_t size = scalar_size(v.element_type)) {
        in.check_count(v.count, size, count_at, "array length");
        v.scalars = in.take(v.count * size, "array");
    } else if (v.element_type == ValueType::String) {
        in.check_count(v.count, min_string_bytes, count_at, "array length");
        v.strings.reserve(v.count);
        for (uint64_t i = 0; i < v.count; ++i) v.strings.push_back(in.read_string("string"));
    } else {
        in.check_count(v.count, min_array_bytes, count_at, "array length");
        in.count_nested(v.count, count_at);
        v.arrays.reserve(v.count);
        for (uint64_t i = 0; i < v.count; ++i) v.arrays.push_back(read_array(in, depth + 1));
    }
    return v;
}

Value read_value(Cursor& in, ValueType type, int depth) {
    if (type == ValueType::Array) return read_array(in, depth);
    if (type == ValueType::String) {
        Value v;
        v.type = type;
        v.offset = in.offset();
        v.string = in.read_string("string");
        return v;
    }
    const uint64_t at = in.offset();
    Value v = decode_scalar(type, in.take(scalar_size(type), "value").data(), at);
    if (type == ValueType::Bool && v.unsigned_value > 1) in.fail_at(at, "bool value {} is neither 0 nor 1", v.unsigned_value);
    return v;
}

class Parser {
public:
    Parser(std::span<const std::byte> bytes, const std::string& file, uint32_t part)
        : in_(bytes, file), bytes_(bytes), part_index_(part) {}

    Part parse() {
        read_header();
        const uint64_t n_tensors = read_count("tensor count", min_tensor_info_bytes);
        const uint64_t n_kv = read_count("metadata count", min_kv_bytes);
        for (uint64_t i = 0; i < n_kv; ++i) read_key_value(i);
        read_alignment();
        in_.check_count(n_tensors, min_tensor_info_bytes, in_.offset(), "tensor count");
        part_.tensors.reserve(n_tensors);
        for (uint64_t i = 0; i < n_tensors; ++i) read_tensor_info(i);
        part_.data_offset = n_tensors > 0 ? align_up(in_.offset(), part_.alignment) : in_.offset();
        place_tensors();
        return std::move(part_);
    }

private:
    void read_header() {
        const std::span<const std::byte> magic = in_.take(4, "magic");
        if (std::memcmp(magic.data(), "GGUF", 4) != 0) in_.fail_at(0, "not a GGUF file (no 'GGUF' magic)");
        part_.version = in_.read<uint32_t>("version");
        if ((part_.version & 0xFFFF) == 0)
            in_.fail_at(4, "version field {:#x} looks byte-swapped; big-endian GGUF is not supported", part_.version);
        if (part_.version == 1) in_.fail_at(4, "GGUF version 1 is not supported (only versions 2 and 3)");
        if (part_.version != 2 && part_.version != 3)
            in_.fail_at(4, "unsupported GGUF version {} (only versions 2 and 3)", part_.version);
    }

    uint64_t read_count(const char* what, uint64_t min_bytes) {
        const uint64_t at = in_.offset();
        const int64_t count = in_.read<int64_t>(what);
        if (count < 0) in_.fail_at(at, "{} {} is negative", what, count);
        in_.check_count(uint64_t(count), min_bytes, at, what);
        return uint64_t(count);
    }

    void read_key_value(uint64_t index) {
        in_.set_context(fmt::format("metadata entry {}", index));
        const uint64_t at = in_.offset();
        KeyValue kv;
        kv.key = in_.read_string("key");
        if (kv.key.empty()) in_.fail_at(at, "key is empty");
        in_.set_context(fmt::format("key '{}'", printable(kv.key)));
        if (part_.key_index.contains(kv.key)) in_.fail_at(at, "duplicate key");
        const ValueType type = read_value_type(in_, "value type");
        kv.value = read_value(in_, type, 0);
        part_.key_index.emplace(kv.key, part_.metadata.size());
        part_.metadata.push_back(std::move(kv));
        in_.set_context({});
    }

    void read_alignment() {
        const auto it = part_.key_index.find("general.alignment");
        if (it == part_.key_index.end()) return;
        const Value& v = part_.metadata[it->second].value;
        in_.set_context("key 'general.alignment'");
        if (v.type != ValueType::U32) in_.fail_at(v.offset, "type is {}, expected u32", describe_type(v));
        if (!std::has_single_bit(v.unsigned_value))
            in_.fail_at(v.offset, "alignment {} is not a power of two", v.unsigned_value);
        part_.alignment = v.unsigned_value;
        in_.set_context({});
    }

    void read_tensor_info(uint64_t index) {
        in_.set_context(fmt::format("tensor {}", index));
        const uint64_t at = in_.offset();
        Tensor t;
        t.part = part_index_;
        t.name = in_.read_string("name");
        if (t.name.empty()) in_.fail_at(at, "name is empty");
        if (t.name.size() > max_name_bytes)
            in_.fail_at(at, "name is {} bytes, longer than ggml's limit of {}", t.name.size(), max_name_bytes);
        in_.set_context(fmt::format("tensor '{}'", printable(t.name)));
        if (!names_.emplace(t.name, index).second) in_.fail_at(at, "duplicate tensor name");
        read_shape(t);
        const uint64_t type_at = in_.offset();
        const uint32_t type_id = in_.read<uint32_t>("type");
        const std::optional<TypeTraits> traits = find_type(type_id);
        if (!traits) in_.fail_at(type_at, "unknown ggml type id {}", type_id);
        t.type = traits->type;
        if (t.ne[0] % traits->block_size != 0)
            in_.fail_at(type_at, "ne[0] = {} is not a multiple of the {} block size {}", t.ne[0], traits->name,
                        traits->block_size);
        t.nbytes = tensor_bytes(t, type_at);
        t.offset = in_.read<uint64_t>("offset");  // relative to the data section until place_tensors
        offset_at_.push_back(in_.offset() - 8);
        part_.tensors.push_back(t);
        in_.set_context({});
    }

    void read_shape(Tensor& t) {
        const uint64_t at = in_.offset();
        t.n_dims = in_.read<uint32_t>("n_dims");
        if (t.n_dims > 4) in_.fail_at(at, "has {} dimensions; at most 4 are allowed", t.n_dims);
        uint64_t n_elements = 1;
        for (uint32_t d = 0; d < t.n_dims; ++d) {
            const uint64_t dim_at = in_.offset();
            const int64_t ne = in_.read<int64_t>("dimension");
            if (ne <= 0) in_.fail_at(dim_at, "ne[{}] = {} is not positive", d, ne);
            if (__builtin_mul_overflow(n_elements, uint64_t(ne), &n_elements) ||
                n_elements > uint64_t(std::numeric_limits<int64_t>::max()))
                in_.fail_at(dim_at, "element count overflows at ne[{}] = {}", d, ne);
            t.ne[d] = uint64_t(ne);
        }
    }

    uint64_t tensor_bytes(const Tensor& t, uint64_t at) {
        uint64_t nbytes = 0;
        bool overflow = __builtin_mul_overflow(t.ne[0] / block_size(t.type), uint64_t(block_bytes(t.type)), &nbytes);
        for (int d = 1; d < 4; ++d) overflow = overflow || __builtin_mul_overflow(nbytes, t.ne[d], &nbytes);
        if (overflow) in_.fail_at(at, "byte size of shape {} overflows", t.shape_string());
        return nbytes;
    }

    // Turns relative offsets into absolute ones, checking alignment, bounds and overlap.
    void place_tensors() {
        const uint64_t file_size = bytes_.size();
        for (size_t i = 0; i < part_.tensors.size(); ++i) {
            Tensor& t = part_.tensors[i];
            in_.set_context(fmt::format("tensor '{}'", printable(t.name)));
            if (t.offset % part_.alignment != 0)
                in_.fail_at(offset_at_[i], "data offset {:#x} is not a multiple of the alignment {}", t.offset,
                            part_.alignment);
            const uint64_t available = file_size - std::min(file_size, part_.data_offset);
            if (t.offset > available || t.nbytes > available - t.offset)
                in_.fail_at(offset_at_[i], "{} bytes at data offset {:#x} run past the end of the file ({} bytes)",
                            t.nbytes, t.offset, file_size);
            t.offset += part_.data_offset;
            t.data = bytes_.subspan(t.offset, t.nbytes);
        }
        in_.set_context({});
        check_overlaps();
    }

    void check_overlaps() {
        std::vector<size_t> order(part_.tensors.size());
        for (size_t i = 0; i < order.size(); ++i) order[i] = i;
        const auto by_offset = [&](size_t a, size_t b) { return part_.tensors[a].offset < part_.tensors[b].offset; };
        std::sort(order.begin(), order.end(), by_offset);
        for (size_t i = 1; i < order.size(); ++i) {
            const Tensor& before = part_.tensors[order[i - 1]];
            const Tensor& after = part_.tensors[order[i]];
            if (before.offset + before.nbytes > after.offset) {
                in_.set_context(fmt::format("tensor '{}'", printable(after.name)));
                in_.fail_at(offset_at_[order[i]], "data at {:#x} overlaps tensor '{}' ({} bytes at {:#x})", after.offset,
                            printable(before.name), before.nbytes, before.offset);
            }
        }
    }

    Cursor in_;
    std::span<const std::byte> bytes_;
    uint32_t part_index_;
    Part part_;
    std::unordered_map<std::string_view, uint64_t> names_;
    std::vector<uint64_t> offset_at_;  // where each tensor's offset field sits, for messages
};

}  // namespace

Part parse_part(std::span<const std::byte> bytes, const std::string& file, uint32_t part_index) {
    return Parser(bytes, file, part_index).parse();
}

}  // namespace vkllm::gguf
