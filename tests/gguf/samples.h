#pragma once
// Test inputs for the GGUF layer: GGUFs from ../shared when present, and writer-made files that
// hold every value type and several tensor types when it is not.
#include <cstddef>
#include <filesystem>
#include <optional>
#include <string_view>
#include <vector>

namespace vkllm::gguf::test {

// Every *.gguf under ../shared (testdata and fixtures), sorted; empty when ../shared is absent.
std::vector<std::filesystem::path> shared_ggufs();

// A small v3 file with one key of every value type (nested arrays too) and tensors of
// f32, f16, q8_0 and q4_K, with deterministic contents.
std::vector<std::byte> sample_file();

// Byte offset of the tensor-info record of `name` (the start of its name string) in a file image.
size_t tensor_info_offset(const std::vector<std::byte>& file, std::string_view name);

std::vector<std::byte> read_bytes(const std::filesystem::path& path);

// A fresh, empty directory under the system temp dir, removed by the destructor.
class TempDir {
public:
    TempDir();
    ~TempDir();
    const std::filesystem::path& path() const { return path_; }

private:
    std::filesystem::path path_;
};

}  // namespace vkllm::gguf::test
