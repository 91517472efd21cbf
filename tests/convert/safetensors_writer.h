#pragma once
// Writes safetensors files for tests: tiny checkpoints and deliberately damaged ones.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace vkllm::test {

struct StTensor {
    std::string name;
    std::string dtype;  // "F32", "BF16", ...
    std::vector<uint64_t> shape;
    std::vector<std::byte> data;
};

// BF16 (round to nearest even) or F32 data of a tensor.
StTensor bf16_tensor(std::string name, std::vector<uint64_t> shape, const std::vector<float>& values);
StTensor f32_tensor(std::string name, std::vector<uint64_t> shape, const std::vector<float>& values);

// The file image: header length, JSON header (tensors in order, data packed), data.
std::vector<std::byte> safetensors_bytes(const std::vector<StTensor>& tensors);
// A file image whose JSON header is `header` verbatim, followed by `data_size` zero bytes.
std::vector<std::byte> safetensors_with_header(const std::string& header, size_t data_size);
void write_file(const std::filesystem::path& path, const std::vector<std::byte>& bytes);

}  // namespace vkllm::test
