#include "vision/image.h"

#include <memory>

#include "core/error.h"
#include "core/file.h"

#define STBI_NO_STDIO
#define STB_IMAGE_STATIC
#define STB_IMAGE_IMPLEMENTATION
#include <stb/stb_image.h>

namespace vkllm::vision {

Image decode_image(std::span<const std::byte> bytes, const std::string& name) {
    if (bytes.empty()) fail("{}: the image file is empty", name);
    if (bytes.size() > uint64_t(INT32_MAX)) fail("{}: {} bytes is too large for an image file", name, bytes.size());
    const auto* data = reinterpret_cast<const stbi_uc*>(bytes.data());
    const int length = int(bytes.size());
    int width = 0, height = 0, channels = 0;
    // The header first: the size is checked before stb allocates the pixels.
    if (!stbi_info_from_memory(data, length, &width, &height, &channels))
        fail("{}: not an image stb_image can decode ({})", name, stbi_failure_reason());
    if (width <= 0 || height <= 0) fail("{}: the image is {} x {} pixels", name, width, height);
    if (uint32_t(width) > max_image_side || uint32_t(height) > max_image_side ||
        uint64_t(width) * uint64_t(height) > max_image_pixels)
        fail("{}: {} x {} pixels exceeds the limit of {} per side and {} in all", name, width, height, max_image_side,
             max_image_pixels);
    std::unique_ptr<stbi_uc, void (*)(void*)> pixels(stbi_load_from_memory(data, length, &width, &height, &channels, 3),
                                                     stbi_image_free);
    if (!pixels) fail("{}: the image is damaged or truncated ({})", name, stbi_failure_reason());
    Image image{uint32_t(width), uint32_t(height), {}};
    image.rgb.assign(pixels.get(), pixels.get() + uint64_t(width) * uint64_t(height) * 3);
    return image;
}

Image load_image(const std::filesystem::path& path) {
    return decode_image(read_file(path, "image file"), path.string());
}

uint64_t content_hash(const Image& image) {
    uint64_t hash = 0xcbf29ce484222325ull;
    auto mix = [&hash](uint8_t byte) { hash = (hash ^ byte) * 0x100000001b3ull; };
    for (uint32_t value : {image.width, image.height})
        for (int shift = 0; shift < 32; shift += 8) mix(uint8_t(value >> shift));
    for (uint8_t byte : image.rgb) mix(byte);
    return hash;
}

}  // namespace vkllm::vision
