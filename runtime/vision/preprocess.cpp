#include "vision/preprocess.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "gguf/quants.h"

namespace vkllm::vision {
namespace {

float lerp(float from, float to, float t) { return from + (to - from) * t; }

Image resize_bilinear(const Image& src, uint32_t width, uint32_t height) {
    Image dst{width, height, std::vector<uint8_t>(uint64_t(width) * height * 3)};
    // Align-corners: the first and last pixels map onto the source's first and last.
    const float x_ratio = width > 1 ? float(src.width - 1) / float(width - 1) : 0.0f;
    const float y_ratio = height > 1 ? float(src.height - 1) / float(height - 1) : 0.0f;
    for (uint32_t y = 0; y < height; ++y) {
        const float py = float(y) * y_ratio;
        const uint32_t y0 = std::min(uint32_t(py), src.height - 1), y1 = std::min(y0 + 1, src.height - 1);
        for (uint32_t x = 0; x < width; ++x) {
            const float px = float(x) * x_ratio;
            const uint32_t x0 = std::min(uint32_t(px), src.width - 1), x1 = std::min(x0 + 1, src.width - 1);
            for (uint32_t c = 0; c < 3; ++c) {
                float top = lerp(src.at(x0, y0, c), src.at(x1, y0, c), px - float(x0));
                float bottom = lerp(src.at(x0, y1, c), src.at(x1, y1, c), px - float(x0));
                dst.rgb[(uint64_t(y) * width + x) * 3 + c] = uint8_t(lerp(top, bottom, py - float(y0)));
            }
        }
    }
    return dst;
}

// The cubic through p[0..3] (at -1, 0, 1, 2) evaluated at t in [0, 1): coefficients in double from
// float differences, as mtmd's resize_bicubic computes them.
float cubic(const std::array<float, 4>& p, float t) {
    const float d0 = p[0] - p[1], d2 = p[2] - p[1], d3 = p[3] - p[1];
    const float a1 = float(-1.0 / 3 * d0 + d2 - 1.0 / 6 * d3);
    const float a2 = float(1.0 / 2 * d0 + 1.0 / 2 * d2);
    const float a3 = float(-1.0 / 6 * d0 - 1.0 / 2 * d2 + 1.0 / 6 * d3);
    return p[1] + a1 * t + a2 * t * t + a3 * t * t * t;
}

Image resize_bicubic(const Image& src, uint32_t width, uint32_t height) {
    Image dst{width, height, std::vector<uint8_t>(uint64_t(width) * height * 3)};
    const float tx = float(src.width) / float(width), ty = float(src.height) / float(height);
    auto clamp_x = [&](int64_t x) { return uint32_t(std::clamp<int64_t>(x, 0, src.width - 1)); };
    auto clamp_y = [&](int64_t y) { return uint32_t(std::clamp<int64_t>(y, 0, src.height - 1)); };
    for (uint32_t i = 0; i < height; ++i) {
        const int64_t y = int64_t(ty * float(i));
        const float dy = ty * float(i) - float(y);
        for (uint32_t j = 0; j < width; ++j) {
            const int64_t x = int64_t(tx * float(j));
            const float dx = tx * float(j) - float(x);
            for (uint32_t c = 0; c < 3; ++c) {
                std::array<float, 4> column;
                for (int r = 0; r < 4; ++r) {
                    const uint32_t sy = clamp_y(y - 1 + r);
                    column[r] = cubic({float(src.at(clamp_x(x - 1), sy, c)), float(src.at(clamp_x(x), sy, c)),
                                       float(src.at(clamp_x(x + 1), sy, c)), float(src.at(clamp_x(x + 2), sy, c))},
                                      dx);
                }
                const float value = std::clamp(std::round(cubic(column, dy)), 0.0f, 255.0f);
                dst.rgb[(uint64_t(i) * width + j) * 3 + c] = uint8_t(value);
            }
        }
    }
    return dst;
}

}  // namespace

Image resize(const Image& image, uint32_t width, uint32_t height, ResizeFilter filter) {
    if (image.width == 0 || image.height == 0 || width == 0 || height == 0)
        fail("cannot resize a {} x {} image to {} x {}", image.width, image.height, width, height);
    return filter == ResizeFilter::Bilinear ? resize_bilinear(image, width, height)
                                            : resize_bicubic(image, width, height);
}

Image letterbox(const Image& image, uint32_t width, uint32_t height, ResizeFilter filter) {
    if (image.width == width && image.height == height) return image;
    // Float arithmetic as mtmd's img_tool::resize (PAD_CEIL).
    const float scale = std::min(float(width) / float(image.width), float(height) / float(image.height));
    const uint32_t new_width = std::min(uint32_t(std::ceil(float(image.width) * scale)), width);
    const uint32_t new_height = std::min(uint32_t(std::ceil(float(image.height) * scale)), height);
    const Image fitted = resize(image, new_width, new_height, filter);
    Image out{width, height, std::vector<uint8_t>(uint64_t(width) * height * 3, 0)};
    const uint32_t left = (width - new_width) / 2, top = (height - new_height) / 2;
    for (uint32_t y = 0; y < new_height; ++y)
        std::copy_n(fitted.rgb.begin() + int64_t(y) * new_width * 3, new_width * 3,
                    out.rgb.begin() + (int64_t(top + y) * width + left) * 3);
    return out;
}

ImageSize size_preserving_ratio(ImageSize size, uint32_t align, uint64_t min_pixels, uint64_t max_pixels) {
    if (size.width == 0 || size.height == 0 || align == 0) return {0, 0};
    const auto a = float(align);
    auto round_to = [&](float x) { return uint32_t(std::max(1.0f, std::round(x / a))) * align; };
    auto floor_to = [&](float x) { return uint32_t(std::max(1.0f, std::floor(x / a))) * align; };
    auto ceil_to = [&](double x) { return uint32_t(std::ceil(x / double(align))) * align; };
    ImageSize out{round_to(float(size.width)), round_to(float(size.height))};
    const float pixels = float(size.height) * float(size.width);
    if (max_pixels && uint64_t(out.width) * out.height > max_pixels) {
        const float beta = std::sqrt(pixels / float(max_pixels));
        out = {floor_to(float(size.width) / beta), floor_to(float(size.height) / beta)};
    } else if (min_pixels && uint64_t(out.width) * out.height < min_pixels) {
        const float beta = std::sqrt(float(min_pixels) / pixels);
        out = {ceil_to(double(float(size.width) * beta)), ceil_to(double(float(size.height) * beta))};
    }
    return out;
}

std::vector<float> normalize(const Image& image, const std::array<float, 3>& mean, const std::array<float, 3>& std) {
    const uint64_t plane = uint64_t(image.width) * image.height;
    std::vector<float> out(plane * 3);
    for (uint64_t i = 0; i < plane; ++i)
        for (uint32_t c = 0; c < 3; ++c) out[c * plane + i] = (float(image.rgb[i * 3 + c]) / 255.0f - mean[c]) / std[c];
    return out;
}

std::vector<float> unfold_patches(std::span<const float> planar, uint32_t width, uint32_t height, uint32_t patch,
                                  bool round_to_f16) {
    const uint32_t nx = width / patch, ny = height / patch, row = 3 * patch * patch;
    std::vector<float> out(uint64_t(nx) * ny * row);
    for (uint32_t py = 0; py < ny; ++py)
        for (uint32_t px = 0; px < nx; ++px) {
            float* dst = &out[(uint64_t(py) * nx + px) * row];
            for (uint32_t c = 0; c < 3; ++c)
                for (uint32_t ky = 0; ky < patch; ++ky)
                    for (uint32_t kx = 0; kx < patch; ++kx) {
                        float v = planar[(uint64_t(c) * height + py * patch + ky) * width + px * patch + kx];
                        *dst++ = round_to_f16 ? gguf::fp16_to_fp32(gguf::fp32_to_fp16(v)) : v;
                    }
        }
    return out;
}

}  // namespace vkllm::vision
