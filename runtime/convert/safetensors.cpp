// safetensors reader (format: huggingface/safetensors README, "Format").
#include "convert/safetensors.h"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "core/error.h"

namespace vkllm::convert {

namespace {

using nlohmann::json;

// The format caps the header at 100 MB; a larger length field is damage, not a big model.
constexpr uint64_t max_header_bytes = 100'000'000;

Dtype parse_dtype(const std::string& text, std::string_view file, std::string_view tensor) {
    if (text == "F32") return Dtype::F32;
    if (text == "F16") return Dtype::F16;
    if (text == "BF16") return Dtype::BF16;
    if (text == "F8_E4M3") return Dtype::F8_E4M3;
    fail("{}: tensor '{}' has dtype '{}' (F32, F16, BF16 and F8_E4M3 are supported)", file, tensor, text);
}

uint64_t unsigned_field(const json& value, std::string_view file, std::string_view tensor, std::string_view what) {
    if (!value.is_number_unsigned())
        fail("{}: tensor '{}': {} holds {}, not a non-negative integer", file, tensor, what, value.dump());
    return value.get<uint64_t>();
}

// One header entry, checked against the size of the data section.
SafeTensor parse_entry(const std::string& name, const json& entry, std::string_view file, uint64_t data_start,
                       uint64_t data_size) {
    if (!entry.is_object()) fail("{}: tensor '{}' is not described by a JSON object", file, name);
    for (const char* field : {"dtype", "shape", "data_offsets"})
        if (!entry.contains(field)) fail("{}: tensor '{}' has no '{}'", file, name, field);
    const json& dtype = entry.at("dtype");
    const json& shape = entry.at("shape");
    const json& offsets = entry.at("data_offsets");
    if (!dtype.is_string()) fail("{}: tensor '{}': dtype is not a string", file, name);
    if (!shape.is_array()) fail("{}: tensor '{}': shape is not an array", file, name);
    if (!offsets.is_array() || offsets.size() != 2)
        fail("{}: tensor '{}': data_offsets is not a [begin, end] pair", file, name);

    SafeTensor t;
    t.name = name;
    t.file = std::string(file);
    t.dtype = parse_dtype(dtype.get<std::string>(), file, name);
    uint64_t expected = dtype_bytes(t.dtype);
    for (const json& dim : shape) {
        const uint64_t n = unsigned_field(dim, file, name, "a shape dimension");
        if (n != 0 && expected > UINT64_MAX / n) fail("{}: tensor '{}': the shape's byte count overflows", file, name);
        expected *= n;
        t.shape.push_back(n);
    }
    const uint64_t begin = unsigned_field(offsets[0], file, name, "data_offsets[0]");
    const uint64_t end = unsigned_field(offsets[1], file, name, "data_offsets[1]");
    if (begin > end || end > data_size)
        fail("{}: tensor '{}': data_offsets [{}, {}] do not lie within the {} data bytes", file, name, begin, end,
             data_size);
    if (end - begin != expected)
        fail("{}: tensor '{}': {} bytes at offset {} but its {} shape needs {}", file, name, end - begin,
             data_start + begin, dtype_name(t.dtype), expected);
    t.offset = data_start + begin;
    return t;
}

}  // namespace

std::string_view dtype_name(Dtype dtype) {
    switch (dtype) {
        case Dtype::F32: return "F32";
        case Dtype::F16: return "F16";
        case Dtype::BF16: return "BF16";
        case Dtype::F8_E4M3: return "F8_E4M3";
    }
    return "?";
}

uint64_t dtype_bytes(Dtype dtype) {
    switch (dtype) {
        case Dtype::F32: return 4;
        case Dtype::F16:
        case Dtype::BF16: return 2;
        case Dtype::F8_E4M3: return 1;
    }
    return 1;
}

uint64_t SafeTensor::n_elements() const {
    uint64_t n = 1;
    for (uint64_t d : shape) n *= d;  // cannot overflow: the header check bounded the byte count
    return n;
}

class SafetensorsFile::Bytes {
public:
    explicit Bytes(std::vector<std::byte> owned) : owned_(std::move(owned)), view_(owned_) {}
    Bytes(void* mapping, size_t size) : mapping_(mapping), view_(static_cast<const std::byte*>(mapping), size) {}
    Bytes(const Bytes&) = delete;
    Bytes& operator=(const Bytes&) = delete;
    ~Bytes() {
        if (mapping_) munmap(mapping_, view_.size());
    }
    std::span<const std::byte> view() const { return view_; }
    void release() const {
        if (mapping_) madvise(mapping_, view_.size(), MADV_DONTNEED);
    }

private:
    std::vector<std::byte> owned_;
    void* mapping_ = nullptr;
    std::span<const std::byte> view_;
};

SafetensorsFile::SafetensorsFile() = default;
SafetensorsFile::SafetensorsFile(SafetensorsFile&&) noexcept = default;
SafetensorsFile& SafetensorsFile::operator=(SafetensorsFile&&) noexcept = default;
SafetensorsFile::~SafetensorsFile() = default;

SafetensorsFile SafetensorsFile::open(const std::filesystem::path& path) {
    SafetensorsFile f;
    f.name_ = path.string();
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) fail("{}: cannot open: {}", f.name_, std::strerror(errno));
    struct stat st {};
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        fail("{}: not a regular file", f.name_);
    }
    if (st.st_size == 0) {
        ::close(fd);
        fail("{}: the file is empty (a safetensors file starts with an 8-byte header length)", f.name_);
    }
    void* mapping = mmap(nullptr, size_t(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
    ::close(fd);
    if (mapping == MAP_FAILED) fail("{}: cannot map {} bytes: {}", f.name_, st.st_size, std::strerror(errno));
    f.bytes_ = std::make_unique<Bytes>(mapping, size_t(st.st_size));
    f.parse();
    return f;
}

SafetensorsFile SafetensorsFile::from_bytes(std::vector<std::byte> bytes, std::string name) {
    SafetensorsFile f;
    f.name_ = std::move(name);
    f.bytes_ = std::make_unique<Bytes>(std::move(bytes));
    f.parse();
    return f;
}

void SafetensorsFile::parse() {
    const std::span<const std::byte> bytes = bytes_->view();
    if (bytes.size() < 8) fail("{}: {} bytes is too short for the 8-byte header length", name_, bytes.size());
    uint64_t header_size = 0;
    std::memcpy(&header_size, bytes.data(), 8);
    if (header_size > max_header_bytes || header_size > bytes.size() - 8)
        fail("{}: the header length {} runs past the end of the file ({} bytes) or the 100 MB limit", name_,
             header_size, bytes.size());
    const auto* text = reinterpret_cast<const char*>(bytes.data() + 8);
    json header;
    try {
        header = json::parse(text, text + header_size);
    } catch (const json::exception& error) {
        fail("{}: the JSON header (bytes 8 to {}) does not parse: {}", name_, 8 + header_size, error.what());
    }
    if (!header.is_object()) fail("{}: the JSON header is not an object", name_);

    const uint64_t data_start = 8 + header_size;
    const uint64_t data_size = bytes.size() - data_start;
    for (const auto& [key, entry] : header.items()) {
        if (key == "__metadata__") continue;
        tensors_.push_back(parse_entry(key, entry, name_, data_start, data_size));
    }
    std::sort(tensors_.begin(), tensors_.end(), [](const SafeTensor& a, const SafeTensor& b) {
        return a.offset != b.offset ? a.offset < b.offset : a.data.size() < b.data.size();
    });
    for (SafeTensor& t : tensors_) {
        const uint64_t nbytes = t.n_elements() * dtype_bytes(t.dtype);
        t.data = bytes.subspan(t.offset, nbytes);
    }
    for (size_t i = 1; i < tensors_.size(); ++i) {
        const SafeTensor& before = tensors_[i - 1];
        if (before.offset + before.data.size() > tensors_[i].offset)
            fail("{}: tensors '{}' and '{}' overlap at byte offset {}", name_, before.name, tensors_[i].name,
                 tensors_[i].offset);
    }
}

void SafetensorsFile::release_pages() const { bytes_->release(); }

Checkpoint Checkpoint::open(const std::filesystem::path& dir) {
    Checkpoint c;
    c.dir_ = dir;
    std::vector<std::filesystem::path> paths;
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator(dir, error))
        if (entry.path().extension() == ".safetensors") paths.push_back(entry.path());
    if (error) fail("{}: cannot list the folder: {}", dir.string(), error.message());
    if (paths.empty()) fail("{}: no *.safetensors files in the folder", dir.string());
    std::sort(paths.begin(), paths.end());
    for (const auto& path : paths) c.files_.push_back(SafetensorsFile::open(path));
    for (const SafetensorsFile& file : c.files_)
        for (const SafeTensor& t : file.tensors()) {
            auto [it, added] = c.index_.emplace(t.name, &t);
            if (!added) fail("{}: tensor '{}' is also in {}", file.name(), t.name, it->second->file);
        }
    return c;
}

void Checkpoint::release_pages() const {
    for (const SafetensorsFile& file : files_) file.release_pages();
}

const SafeTensor* Checkpoint::find(std::string_view name) const {
    auto it = index_.find(name);
    return it == index_.end() ? nullptr : it->second;
}

const SafeTensor& Checkpoint::tensor(std::string_view name) const {
    const SafeTensor* t = find(name);
    if (!t) fail("{}: the checkpoint has no tensor '{}'", dir_.string(), name);
    return *t;
}

}  // namespace vkllm::convert
