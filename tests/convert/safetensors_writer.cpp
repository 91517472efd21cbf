#include "safetensors_writer.h"

#include <nlohmann/json.hpp>

#include <cstring>
#include <fstream>

#include "gguf/quants.h"

namespace vkllm::test {

StTensor bf16_tensor(std::string name, std::vector<uint64_t> shape, const std::vector<float>& values) {
    StTensor t{std::move(name), "BF16", std::move(shape), std::vector<std::byte>(values.size() * 2)};
    for (size_t i = 0; i < values.size(); ++i) {
        const uint16_t bits = gguf::fp32_to_bf16(values[i]);
        std::memcpy(t.data.data() + 2 * i, &bits, 2);
    }
    return t;
}

StTensor f32_tensor(std::string name, std::vector<uint64_t> shape, const std::vector<float>& values) {
    StTensor t{std::move(name), "F32", std::move(shape), std::vector<std::byte>(values.size() * 4)};
    if (!values.empty()) std::memcpy(t.data.data(), values.data(), t.data.size());
    return t;
}

std::vector<std::byte> safetensors_with_header(const std::string& header, size_t data_size) {
    std::vector<std::byte> bytes(8 + header.size() + data_size);
    const uint64_t length = header.size();
    std::memcpy(bytes.data(), &length, 8);
    std::memcpy(bytes.data() + 8, header.data(), header.size());
    return bytes;
}

std::vector<std::byte> safetensors_bytes(const std::vector<StTensor>& tensors) {
    nlohmann::ordered_json header;
    header["__metadata__"] = {{"format", "pt"}};
    size_t offset = 0;
    for (const StTensor& t : tensors) {
        header[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.data.size()}}};
        offset += t.data.size();
    }
    std::vector<std::byte> bytes = safetensors_with_header(header.dump(), offset);
    size_t at = bytes.size() - offset;
    for (const StTensor& t : tensors) {
        if (!t.data.empty()) std::memcpy(bytes.data() + at, t.data.data(), t.data.size());
        at += t.data.size();
    }
    return bytes;
}

void write_file(const std::filesystem::path& path, const std::vector<std::byte>& bytes) {
    std::ofstream file(path, std::ios::binary | std::ios::trunc);
    file.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}

}  // namespace vkllm::test
