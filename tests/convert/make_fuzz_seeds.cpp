// safetensors_fuzz_seeds OUT_DIR [CHECKPOINT.safetensors...]: seed inputs for the safetensors
// reader's fuzzer: small writer-made files of every dtype and, for each checkpoint given, its header
// with the tensors cut to their first element (a real header layout, a few KiB).
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "safetensors_writer.h"

using namespace vkllm;

namespace {

// The checkpoint's header kept whole, each tensor shrunk to one element so the data stays tiny.
std::vector<std::byte> miniature(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    uint64_t length = 0;
    in.read(reinterpret_cast<char*>(&length), 8);
    if (!in || length > 100'000'000) return {};
    std::string text(length, '\0');
    in.read(text.data(), std::streamsize(length));
    nlohmann::ordered_json header = nlohmann::ordered_json::parse(text, nullptr, false);
    if (header.is_discarded() || !header.is_object()) return {};
    uint64_t offset = 0;
    for (auto& [name, entry] : header.items()) {
        if (name == "__metadata__") continue;
        const uint64_t size = entry["dtype"] == "F32" ? 4 : entry["dtype"] == "F8_E4M3" ? 1 : 2;
        entry["shape"] = {1};
        entry["data_offsets"] = {offset, offset + size};
        offset += size;
    }
    return test::safetensors_with_header(header.dump(), offset);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: safetensors_fuzz_seeds OUT_DIR [CHECKPOINT.safetensors...]\n");
        return 1;
    }
    const std::filesystem::path out = argv[1];
    std::filesystem::create_directories(out);
    test::StTensor f8{"f8", "F8_E4M3", {2, 2}, {std::byte{0x38}, std::byte{0xb8}, std::byte{0x7f}, std::byte{0x01}}};
    test::StTensor f16{"f16", "F16", {1}, {std::byte{0x00}, std::byte{0x3c}}};
    test::write_file(out / "sample.safetensors",
                     test::safetensors_bytes({test::bf16_tensor("w", {2, 3}, {1, 2, 3, 4, 5, 6}),
                                              test::f32_tensor("b", {3}, {1, 2, 3}), f8, f16}));
    for (int i = 2; i < argc; ++i) {
        const std::vector<std::byte> bytes = miniature(argv[i]);
        if (!bytes.empty()) test::write_file(out / ("checkpoint-" + std::to_string(i - 1) + ".safetensors"), bytes);
    }
    return 0;
}
