// GGUF parsing and validation (model-notes.md A.1). Every read goes through Cursor, which checks
// the bytes exist before touching them; every count is checked against the bytes left before
// anything is allocated for it.
#include "gguf/reader.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <fmt/format.h>
#include <limits>
#include <utility>

#include "core/error.h"

static_assert(std::endian::native == std::endian::little, "GGUF is read by memcpy of little-endian fields");

namespace vkllm::gguf {

// The bytes of one part: a read-only private mapping of a file, or a buffer the File owns.
class Mapping {
public:
    explicit Mapping(std::vector<std::byte> bytes) : owned_(std::move(bytes)), bytes_(owned_) {}

    explicit Mapping(const std::filesystem::path& path) {
        const std::string name = path.string();
        const int fd = ::open(name.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) fail("{}: cannot open: {}", name, std::strerror(errno));
        struct stat info {};
        if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
            ::close(fd);
            fail("{}: not a regular file", name);
        }
        const size_t size = size_t(info.st_size);
        if (size > 0) {
            void* address = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
            const int mmap_errno = errno;
            ::close(fd);
            if (address == MAP_FAILED) fail("{}: cannot map {} bytes: {}", name, size, std::strerror(mmap_errno));
            mapped_ = address;
            bytes_ = {static_cast<const std::byte*>(address), size};
        } else {
            ::close(fd);
        }
    }

    Mapping(const Mapping&) = delete;
    Mapping& operator=(const Mapping&) = delete;
    ~Mapping() {
        if (mapped_) ::munmap(mapped_, bytes_.size());
    }

    std::span<const std::byte> bytes() const { return bytes_; }

private:
    std::vector<std::byte> owned_;
    void* mapped_ = nullptr;
    std::span<const std::byte> bytes_;
};

namespace {

constexpr uint64_t default_alignment = 32;
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

uint64_t align_up(uint64_t offset, uint64_t alignment) {
    return offset + (alignment - offset % alignment) % alignment;
}

template <class T>
T load(const std::byte* p) {
    T value;
    std::memcpy(&value, p, sizeof(T));
    return value;
}

// Decodes one fixed-size scalar of `type` from its little-endian bytes.
Value decode_scalar(ValueType type, const std::byte* p, uint64_t offset) {
    Value v;
    v.type = type;
    v.offset = offset;
    switch (type) {
        case ValueType::U8: v.unsigned_value = load<uint8_t>(p); break;
        case ValueType::U16: v.unsigned_value = load<uint16_t>(p); break;
        case ValueType::U32: v.unsigned_value = load<uint32_t>(p); break;
        case ValueType::U64: v.unsigned_value = load<uint64_t>(p); break;
        case ValueType::Bool: v.unsigned_value = load<uint8_t>(p); break;
        case ValueType::I8: v.signed_value = load<int8_t>(p); break;
        case ValueType::I16: v.signed_value = load<int16_t>(p); break;
        case ValueType::I32: v.signed_value = load<int32_t>(p); break;
        case ValueType::I64: v.signed_value = load<int64_t>(p); break;
        case ValueType::F32: v.float_value = load<float>(p); break;
        case ValueType::F64: v.float_value = load<double>(p); break;
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

// The integer value converted to T when it fits, else nullopt.
template <class T>
std::optional<T> integer_as(const Value& v) {
    if (is_signed(v.type)) {
        if (!std::in_range<T>(v.signed_value)) return std::nullopt;
        return T(v.signed_value);
    }
    if (!std::in_range<T>(v.unsigned_value)) return std::nullopt;
    return T(v.unsigned_value);
}

std::string integer_string(const Value& v) {
    return is_signed(v.type) ? std::to_string(v.signed_value) : std::to_string(v.unsigned_value);
}

std::string describe_type(const Value& v) {
    if (v.type != ValueType::Array) return std::string(value_type_name(v.type));
    return fmt::format("array of {}", value_type_name(v.element_type));
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
        return load<T>(take(sizeof(T), what).data());
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

}  // namespace

// The contents of one part, before parts are joined.
struct Part {
    uint32_t version = 0;
    uint64_t alignment = default_alignment;
    uint64_t data_offset = 0;
    std::vector<KeyValue> metadata;
    std::unordered_map<std::string_view, size_t> key_index;
    std::vector<Tensor> tensors;
};

namespace {

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

// "dir/model-00001-of-00003.gguf" -> the paths of all 3 parts; empty when the name has no such suffix.
std::vector<std::filesystem::path> split_paths(const std::filesystem::path& first, uint32_t count) {
    const std::string file = first.filename().string();
    const std::string suffix = fmt::format("-00001-of-{:05}.gguf", count);
    if (file.size() <= suffix.size() || !file.ends_with(suffix)) return {};
    const std::string prefix = file.substr(0, file.size() - suffix.size());
    std::vector<std::filesystem::path> paths;
    for (uint32_t k = 1; k <= count; ++k)
        paths.push_back(first.parent_path() / fmt::format("{}-{:05}-of-{:05}.gguf", prefix, k, count));
    return paths;
}

std::optional<uint32_t> split_key(const Part& part, const std::string& file, std::string_view key) {
    const auto it = part.key_index.find(key);
    if (it == part.key_index.end()) return std::nullopt;
    const Value& v = part.metadata[it->second].value;
    const std::optional<uint32_t> n = v.is_integer() ? integer_as<uint32_t>(v) : std::nullopt;
    if (!n) fail("{}: key '{}' at offset {:#x} is not a count ({})", file, key, v.offset, describe_type(v));
    return n;
}

}  // namespace

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

File::File() = default;
File::File(File&&) noexcept = default;
File& File::operator=(File&&) noexcept = default;
File::~File() = default;

File File::from_bytes(std::vector<std::byte> bytes, std::string name) {
    File file;
    file.name_ = std::move(name);
    file.parts_.push_back(std::make_unique<Mapping>(std::move(bytes)));
    file.part_names_.push_back(file.name_);
    std::vector<Part> parts;
    parts.push_back(Parser(file.parts_[0]->bytes(), file.name_, 0).parse());
    file.join(parts);
    return file;
}

File File::open(const std::filesystem::path& path) {
    File file;
    file.name_ = path.string();
    file.parts_.push_back(std::make_unique<Mapping>(path));
    file.part_names_.push_back(file.name_);
    std::vector<Part> parts;
    parts.push_back(Parser(file.parts_[0]->bytes(), file.name_, 0).parse());
    const uint32_t count = split_key(parts[0], file.name_, "split.count").value_or(1);
    const uint32_t number = split_key(parts[0], file.name_, "split.no").value_or(0);
    if (count > 1 && number != 0)
        fail("{}: is part {} of a {}-part split model; open the first part", file.name_, number + 1, count);
    if (count > 1) {
        const std::vector<std::filesystem::path> paths = split_paths(path, count);
        if (paths.empty())
            fail("{}: key 'split.count' says {} parts, but the name does not end in -00001-of-{:05}.gguf", file.name_,
                 count, count);
        for (uint32_t k = 1; k < count; ++k) {
            file.part_names_.push_back(paths[k].string());
            file.parts_.push_back(std::make_unique<Mapping>(paths[k]));
            const std::string& name = file.part_names_[k];
            parts.push_back(Parser(file.parts_[k]->bytes(), name, k).parse());
            if (split_key(parts[k], name, "split.no") != k || split_key(parts[k], name, "split.count") != count)
                fail("{}: keys 'split.no' and 'split.count' do not say part {} of {}", name, k + 1, count);
        }
    }
    file.join(parts);
    if (const std::optional<int64_t> expected = file.get_i64("split.tensors.count");
        expected && count > 1 && uint64_t(*expected) != file.tensors_.size())
        fail("{}: key 'split.tensors.count' says {} tensors, but the {} parts hold {}", file.name_, *expected, count,
             file.tensors_.size());
    return file;
}

void File::join(std::vector<Part>& parts) {
    version_ = parts[0].version;
    alignment_ = parts[0].alignment;
    metadata_ = std::move(parts[0].metadata);
    key_index_ = std::move(parts[0].key_index);
    for (size_t k = 0; k < parts.size(); ++k) {
        data_offsets_.push_back(parts[k].data_offset);
        for (const Tensor& t : parts[k].tensors) {
            if (!tensor_index_.emplace(t.name, tensors_.size()).second)
                fail("{}: tensor '{}' at offset {:#x} repeats a tensor of an earlier part", part_names_[k], printable(t.name),
                     t.offset);
            tensors_.push_back(t);
        }
    }
}

uint64_t File::part_size(size_t part) const { return parts_.at(part)->bytes().size(); }
uint64_t File::data_offset(size_t part) const { return data_offsets_.at(part); }

const Value* File::find(std::string_view key) const {
    const auto it = key_index_.find(key);
    return it == key_index_.end() ? nullptr : &metadata_[it->second].value;
}

const Tensor* File::find_tensor(std::string_view name) const {
    const auto it = tensor_index_.find(name);
    return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

const Tensor& File::tensor(std::string_view name) const {
    const Tensor* t = find_tensor(name);
    if (!t) fail("{}: tensor '{}' is missing", name_, printable(name));
    return *t;
}

void File::require_supported(const Tensor& t) const {
    if (runs_on_vkllm(t.type)) return;
    fail("{}: tensor '{}' at offset {:#x} has type {}, which vkllm does not run (it runs f32, f16, bf16, q4_0, "
         "q4_1, q5_0, q5_1, q8_0, q4_K, q5_K, q6_K)",
         part_names_.at(t.part), printable(t.name), t.offset, type_name(t.type));
}

namespace {

[[noreturn]] void wrong_type(const std::string& file, std::string_view key, const Value& v, std::string_view expected) {
    fail("{}: key '{}' at offset {:#x} is {}, expected {}", file, key, v.offset, describe_type(v), expected);
}

template <class T>
T integer_or_fail(const std::string& file, std::string_view key, const Value& v, std::string_view expected) {
    if (!v.is_integer()) wrong_type(file, key, v, expected);
    const std::optional<T> n = integer_as<T>(v);
    if (!n) fail("{}: key '{}' at offset {:#x} holds {}, which does not fit {}", file, key, v.offset, integer_string(v), expected);
    return *n;
}

}  // namespace

std::optional<uint64_t> File::get_u64(std::string_view key) const {
    const Value* v = find(key);
    if (!v) return std::nullopt;
    return integer_or_fail<uint64_t>(name_, key, *v, "u64");
}

std::optional<int64_t> File::get_i64(std::string_view key) const {
    const Value* v = find(key);
    if (!v) return std::nullopt;
    return integer_or_fail<int64_t>(name_, key, *v, "i64");
}

std::optional<uint32_t> File::get_u32(std::string_view key) const {
    const Value* v = find(key);
    if (!v) return std::nullopt;
    return integer_or_fail<uint32_t>(name_, key, *v, "u32");
}

std::optional<int32_t> File::get_i32(std::string_view key) const {
    const Value* v = find(key);
    if (!v) return std::nullopt;
    return integer_or_fail<int32_t>(name_, key, *v, "i32");
}

std::optional<float> File::get_f32(std::string_view key) const {
    const Value* v = find(key);
    if (!v) return std::nullopt;
    if (v->type != ValueType::F32) wrong_type(name_, key, *v, "f32");
    return float(v->float_value);
}

std::optional<double> File::get_f64(std::string_view key) const {
    const Value* v = find(key);
    if (!v) return std::nullopt;
    if (!v->is_float()) wrong_type(name_, key, *v, "f64");
    return v->float_value;
}

std::optional<bool> File::get_bool(std::string_view key) const {
    const Value* v = find(key);
    if (!v) return std::nullopt;
    if (v->type != ValueType::Bool) wrong_type(name_, key, *v, "bool");
    return v->unsigned_value != 0;
}

std::optional<std::string_view> File::get_string(std::string_view key) const {
    const Value* v = find(key);
    if (!v) return std::nullopt;
    if (v->type != ValueType::String) wrong_type(name_, key, *v, "string");
    return v->string;
}

std::optional<std::span<const std::string_view>> File::get_string_array(std::string_view key) const {
    const Value* v = find(key);
    if (!v) return std::nullopt;
    if (v->type != ValueType::Array || v->element_type != ValueType::String) wrong_type(name_, key, *v, "array of string");
    return std::span<const std::string_view>(v->strings);
}

std::optional<std::vector<float>> File::get_f32_array(std::string_view key) const {
    const Value* v = find(key);
    if (!v) return std::nullopt;
    if (v->type != ValueType::Array || v->element_type != ValueType::F32) wrong_type(name_, key, *v, "array of f32");
    std::vector<float> out(v->count);
    std::memcpy(out.data(), v->scalars.data(), v->scalars.size());
    return out;
}

namespace {

template <class T>
std::optional<std::vector<T>> integer_array(const File& file, std::string_view key, std::string_view expected) {
    const Value* v = file.find(key);
    if (!v) return std::nullopt;
    if (v->type != ValueType::Array || !is_integer_type(v->element_type))
        fail("{}: key '{}' at offset {:#x} is {}, expected {}", file.name(), key, v->offset, describe_type(*v), expected);
    std::vector<T> out;
    out.reserve(v->count);
    for (uint64_t i = 0; i < v->count; ++i) {
        const Value item = v->item(i);
        const std::optional<T> n = integer_as<T>(item);
        if (!n)
            fail("{}: key '{}' at offset {:#x}: item {} holds {}, which does not fit {}", file.name(), key, v->offset, i,
                 integer_string(item), expected);
        out.push_back(*n);
    }
    return out;
}

}  // namespace

std::optional<std::vector<int32_t>> File::get_i32_array(std::string_view key) const {
    return integer_array<int32_t>(*this, key, "array of i32");
}

std::optional<std::vector<uint32_t>> File::get_u32_array(std::string_view key) const {
    return integer_array<uint32_t>(*this, key, "array of u32");
}

}  // namespace vkllm::gguf
