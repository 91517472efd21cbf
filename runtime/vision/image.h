#pragma once
// Decoded images: 8-bit RGB, row-major, as llama.cpp's mtmd receives them (clip_image_u8).
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

namespace vkllm::vision {

struct Image {
    uint32_t width = 0, height = 0;
    std::vector<uint8_t> rgb;  // [height][width][3]

    uint8_t at(uint32_t x, uint32_t y, uint32_t c) const { return rgb[(uint64_t(y) * width + x) * 3 + c]; }
};

// Largest side and pixel count an image may have: a 16k x 16k photo still decodes, a header that
// claims 100k x 100k is refused before any pixel is allocated.
constexpr uint32_t max_image_side = 16384;
constexpr uint64_t max_image_pixels = uint64_t(1) << 28;

// Decodes PNG, JPEG, BMP, GIF (first frame), TGA, PSD, HDR, PIC or PNM (stb_image). Alpha is dropped,
// not composited, as llama.cpp's loader does (stbi_load with 3 channels). Throws vkllm::Error naming
// `name` for a truncated, zero-sized, oversized or unsupported image.
Image decode_image(std::span<const std::byte> bytes, const std::string& name);
Image load_image(const std::filesystem::path& path);

// FNV-1a over the size and pixels: the key of the encoder's embedding cache.
uint64_t content_hash(const Image& image);

}  // namespace vkllm::vision
