#pragma once
// Hugging Face safetensors files: an 8-byte little-endian header length, a JSON header
// {"name": {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {...}}, then the data.
// The file is memory-mapped and its header checked completely at open (JSON syntax, dtypes, shapes
// against byte lengths, offsets inside the data, no two tensors sharing bytes), so tensor data is
// only ever read in bounds. A Checkpoint is the set of *.safetensors shards of one folder.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace vkllm::convert {

enum class Dtype { F32, F16, BF16, F8_E4M3 };

std::string_view dtype_name(Dtype dtype);
uint64_t dtype_bytes(Dtype dtype);

struct SafeTensor {
    std::string name;
    Dtype dtype = Dtype::F32;
    std::vector<uint64_t> shape;     // PyTorch order: the last dimension is contiguous
    uint64_t offset = 0;             // absolute byte offset in its file, for messages
    std::span<const std::byte> data;  // a view into the mapping (any alignment)
    std::string file;                 // the shard's name, for messages

    uint64_t n_elements() const;
};

class SafetensorsFile {
public:
    static SafetensorsFile open(const std::filesystem::path& path);
    // Parses an image held in memory (the fuzzer's path); `name` stands for the file in errors.
    static SafetensorsFile from_bytes(std::vector<std::byte> bytes, std::string name = "<memory>");

    SafetensorsFile(SafetensorsFile&&) noexcept;
    SafetensorsFile& operator=(SafetensorsFile&&) noexcept;
    ~SafetensorsFile();

    const std::string& name() const { return name_; }
    const std::vector<SafeTensor>& tensors() const { return tensors_; }  // in data order
    // Drops the mapped pages from this process (they stay in the page cache and fault back in when
    // read again), so the resident size of a conversion stays at one tensor, not the checkpoint.
    void release_pages() const;

private:
    class Bytes;  // a read-only mmap or an owned buffer
    SafetensorsFile();
    void parse();

    std::string name_;
    std::unique_ptr<Bytes> bytes_;
    std::vector<SafeTensor> tensors_;
};

// Every *.safetensors file of a folder (sorted by name); tensor names must be unique across them.
class Checkpoint {
public:
    static Checkpoint open(const std::filesystem::path& dir);

    const std::vector<SafetensorsFile>& files() const { return files_; }
    const SafeTensor* find(std::string_view name) const;
    const SafeTensor& tensor(std::string_view name) const;  // throws naming the folder and tensor
    void release_pages() const;  // of every shard

private:
    std::filesystem::path dir_;
    std::vector<SafetensorsFile> files_;
    std::map<std::string, const SafeTensor*, std::less<>> index_;
};

}  // namespace vkllm::convert
