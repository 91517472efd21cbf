#pragma once
// Image preprocessing as llama.cpp's mtmd does it (model-notes.md D.1-D.3): resizing with its
// bilinear or bicubic filter, letterboxing (PAD_CEIL, black), Pixtral's token-capped target size,
// normalization to planar floats, and the patch unfolding (im2col) that turns the patch-embedding
// convolution into a matmul.
#include <array>
#include <cstdint>
#include <vector>

#include "vision/image.h"

namespace vkllm::vision {

enum class ResizeFilter {
    Bilinear,  // align-corners mapping, float lerp, truncated to u8 (mtmd resize_bilinear)
    Bicubic,   // 4x4 Catmull-style cubic, rounded and clamped (mtmd resize_bicubic)
};

Image resize(const Image& image, uint32_t width, uint32_t height, ResizeFilter filter);
// Keeps the aspect ratio: resized to fit (each side rounded up, at most the target) and centred on
// black. An image already of the target size is returned unchanged.
Image letterbox(const Image& image, uint32_t width, uint32_t height, ResizeFilter filter);

struct ImageSize {
    uint32_t width = 0, height = 0;
};
// Pixtral's target: each side a multiple of `align` (patch x merge) nearest the original, scaled
// down to at most max_pixels or up to at least min_pixels (calc_size_preserved_ratio).
ImageSize size_preserving_ratio(ImageSize size, uint32_t align, uint64_t min_pixels, uint64_t max_pixels);

// Planar f32 [3][height][width]: (u8 / 255 - mean[c]) / std[c].
std::vector<float> normalize(const Image& image, const std::array<float, 3>& mean, const std::array<float, 3>& std);

// The patches of a planar image as rows: [ny][nx] patches of 3 * P * P values ordered
// (channel, ky, kx), the columns of the GGUF patch kernel {P, P, 3, n_embd}. With round_to_f16 the
// values pass through f16, as ggml's im2col does for an F16 kernel.
std::vector<float> unfold_patches(std::span<const float> planar, uint32_t width, uint32_t height, uint32_t patch,
                                  bool round_to_f16);

}  // namespace vkllm::vision
