// GGUF files: mapping, split parts, and typed access to what the parser validated.
#include "gguf/reader.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fmt/format.h>

#include "core/error.h"
#include "gguf/parser.h"
#include "gguf/value.h"

namespace vkllm::gguf {

// The bytes of one part: a read-only private mapping of a file, the file read into private memory
// (ReadMode::Read), or a buffer the File owns. The descriptor stays open while the pages of uploaded
// tensors may be released.
class Mapping {
public:
    explicit Mapping(std::vector<std::byte> bytes) : owned_(std::move(bytes)), bytes_(owned_) {}

    Mapping(const std::filesystem::path& path, ReadMode mode) : name_(path.string()) {
        fd_ = ::open(name_.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd_ < 0) fail("{}: cannot open: {}", name_, std::strerror(errno));
        struct stat info {};
        if (::fstat(fd_, &info) != 0 || !S_ISREG(info.st_mode)) {
            ::close(fd_);
            fail("{}: not a regular file", name_);
        }
        const size_t size = size_t(info.st_size);
        if (size == 0) return;
        // Read mode: anonymous memory the file is read into, so no page of the file stays mapped;
        // released ranges are mapped from the file again, so they read the same bytes on a later touch.
        const bool read = mode == ReadMode::Read;
        void* address = ::mmap(nullptr, size, read ? PROT_READ | PROT_WRITE : PROT_READ,
                               read ? MAP_PRIVATE | MAP_ANONYMOUS : MAP_PRIVATE, read ? -1 : fd_, 0);
        if (address == MAP_FAILED) {
            const int mmap_errno = errno;
            ::close(fd_);
            fail("{}: cannot map {} bytes: {}", name_, size, std::strerror(mmap_errno));
        }
        mapped_ = address;
        bytes_ = {static_cast<const std::byte*>(address), size};
        if (read) read_all(static_cast<std::byte*>(address), size);
    }

    Mapping(const Mapping&) = delete;
    Mapping& operator=(const Mapping&) = delete;
    ~Mapping() {
        if (mapped_) ::munmap(mapped_, bytes_.size());
        if (fd_ >= 0) ::close(fd_);
    }

    std::span<const std::byte> bytes() const { return bytes_; }

    // The whole pages inside `range` leave the process: a file mapping drops them (a later read
    // faults them in from the file again), read memory is mapped from the file in their place, and
    // the kernel's page cache lets go of them too. A buffer the File owns keeps them.
    void release(std::span<const std::byte> range) const {
        if (!mapped_ || range.empty()) return;
        static const size_t page = size_t(::sysconf(_SC_PAGESIZE));
        const size_t offset = size_t(range.data() - bytes_.data());
        const size_t begin = (offset + page - 1) / page * page, end = (offset + range.size()) / page * page;
        if (begin >= end) return;
        std::byte* address = static_cast<std::byte*>(mapped_) + begin;
        if (read_mode_)
            ::mmap(address, end - begin, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd_, off_t(begin));
        else
            ::madvise(address, end - begin, MADV_DONTNEED);
        ::posix_fadvise(fd_, off_t(begin), off_t(end - begin), POSIX_FADV_DONTNEED);
    }

private:
    std::string name_;
    std::vector<std::byte> owned_;
    int fd_ = -1;
    void* mapped_ = nullptr;
    bool read_mode_ = false;
    std::span<const std::byte> bytes_;

    void read_all(std::byte* out, size_t size) {
        read_mode_ = true;
        for (size_t done = 0; done < size;) {
            const ssize_t got = ::pread(fd_, out + done, size - done, off_t(done));
            if (got < 0 && errno == EINTR) continue;
            if (got <= 0) {
                const std::string why = got < 0 ? std::strerror(errno) : "the file ended early";
                ::munmap(mapped_, size);
                ::close(fd_);
                fail("{}: cannot read byte {} of {}: {}", name_, done, size, why);
            }
            done += size_t(got);
        }
        ::mprotect(out, size, PROT_READ);
    }
};

namespace {

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
    parts.push_back(parse_part(file.parts_[0]->bytes(), file.name_, 0));
    file.join(parts);
    return file;
}

File File::open(const std::filesystem::path& path, ReadMode mode) {
    File file;
    file.name_ = path.string();
    file.parts_.push_back(std::make_unique<Mapping>(path, mode));
    file.part_names_.push_back(file.name_);
    std::vector<Part> parts;
    parts.push_back(parse_part(file.parts_[0]->bytes(), file.name_, 0));
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
            file.parts_.push_back(std::make_unique<Mapping>(paths[k], mode));
            const std::string& name = file.part_names_[k];
            parts.push_back(parse_part(file.parts_[k]->bytes(), name, k));
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

void File::release(const Tensor& tensor) const { parts_.at(tensor.part)->release(tensor.data); }

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
    std::string runs;
    for (const WeightTypeInfo& info : weight_types) runs += (runs.empty() ? "" : ", ") + std::string(type_name(info.type));
    fail("{}: tensor '{}' at offset {:#x} has type {}, which vkllm does not run (it runs {})", part_names_.at(t.part),
         printable(t.name), t.offset, type_name(t.type), runs);
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
    if (!out.empty()) std::memcpy(out.data(), v->scalars.data(), v->scalars.size());  // empty: both null
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
