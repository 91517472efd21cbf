// Image decoding (errors for bad files) and mtmd's preprocessing geometry and arithmetic.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "fixture_check.h"
#include "vision/image.h"
#include "vision/preprocess.h"
#include "test_main.h"

using namespace vkllm;

namespace {

std::vector<std::byte> bytes_of(std::string_view text) {
    auto view = std::as_bytes(std::span(text.data(), text.size()));
    return {view.begin(), view.end()};
}

// A 24-bit BMP header (no pixels) claiming width x height.
std::vector<std::byte> bmp_header(int32_t width, int32_t height) {
    std::vector<std::byte> bytes(54);
    auto put = [&](size_t at, uint32_t value, int size) {
        for (int i = 0; i < size; ++i) bytes[at + i] = std::byte(value >> (8 * i));
    };
    bytes[0] = std::byte('B'), bytes[1] = std::byte('M');
    put(2, 54, 4), put(10, 54, 4), put(14, 40, 4);
    put(18, uint32_t(width), 4), put(22, uint32_t(height), 4), put(26, 1, 2), put(28, 24, 2);
    return bytes;
}

void check_refused(std::span<const std::byte> bytes, const char* expected) {
    try {
        vision::decode_image(bytes, "x.img");
        FAIL("decoded a bad image");
    } catch (const Error& error) {
        CAPTURE(error.what());
        CHECK(std::string(error.what()).find(expected) != std::string::npos);
    }
}

}  // namespace

TEST_CASE("bad images are refused with one clear error, never a crash") {
    check_refused({}, "empty");
    check_refused(bytes_of("GIF87 but not really an image at all"), "not an image");
    check_refused(bmp_header(0, 10), "x.img");
    check_refused(bmp_header(100000, 100000), "exceeds the limit");
    auto dir = test::fixture_dir("vision/pixtral_vis");
    if (dir.empty()) return;
    std::ifstream in(dir / "chelsea.png", std::ios::binary);
    std::vector<char> png((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (size_t cut : {size_t(8), size_t(100), png.size() / 2}) {
        CAPTURE(cut);
        check_refused(std::as_bytes(std::span(png.data(), cut)), cut == 8 ? "not an image" : "damaged or truncated");
    }
    const vision::Image image = vision::decode_image(std::as_bytes(std::span(png)), "chelsea.png");
    CHECK(image.width == 451);
    CHECK(image.height == 300);
}

TEST_CASE("JPEG decodes to RGB (testdata rocket.jpg, 640 x 427)") {
    const auto path = vkllm::test::shared_path("testdata/images/rocket.jpg");
    if (!path) return;
    const vision::Image image = vision::load_image(*path);
    CHECK(image.width == 640);
    CHECK(image.height == 427);
    CHECK(image.rgb.size() == 640u * 427u * 3u);
}

TEST_CASE("Pixtral's target size: multiples of 28, nearest to the image, capped in tokens") {
    auto size = [](uint32_t w, uint32_t h) {
        vision::ImageSize s = vision::size_preserving_ratio({w, h}, 28, 8 * 28 * 28, 1024 * 28 * 28);
        return std::pair{s.width, s.height};
    };
    CHECK(size(451, 300) == std::pair{448u, 308u});  // the fixture: 16 x 11 merged tokens
    CHECK(size(5000, 5000) == std::pair{896u, 896u});  // 32 x 32 = 1024 tokens at most
    CHECK(size(10, 10) == std::pair{84u, 84u});  // at least 8 tokens: scaled up
}

TEST_CASE("letterbox keeps the aspect ratio on black, centred; bilinear maps corners onto corners") {
    vision::Image image{4, 2, {}};
    for (uint32_t i = 0; i < 8; ++i) image.rgb.insert(image.rgb.end(), {uint8_t(i * 30), uint8_t(255 - i * 30), 7});
    const vision::Image boxed = vision::letterbox(image, 8, 8, vision::ResizeFilter::Bilinear);
    REQUIRE(boxed.width == 8);
    REQUIRE(boxed.height == 8);
    // 4x2 fits 8x8 as 8x4, offset (0, 2): rows 0-1 and 6-7 stay black.
    for (uint32_t x = 0; x < 8; ++x) {
        CHECK(boxed.at(x, 0, 0) == 0);
        CHECK(boxed.at(x, 7, 2) == 0);
    }
    CHECK(boxed.at(0, 2, 0) == image.at(0, 0, 0));
    CHECK(boxed.at(7, 5, 1) == image.at(3, 1, 1));
    // Interior: truncated lerp, e.g. x = 1 maps to 3/7 of the way from pixel 0 to 1.
    CHECK(boxed.at(1, 2, 0) == uint8_t(0 + (30 - 0) * (3.0f / 7.0f)));
    CHECK(vision::letterbox(image, 4, 2, vision::ResizeFilter::Bilinear).rgb == image.rgb);
}

TEST_CASE("normalize and unfold: planar (x/255 - mean) / std, patches ordered (channel, ky, kx)") {
    vision::Image image{4, 2, std::vector<uint8_t>(24)};
    for (size_t i = 0; i < image.rgb.size(); ++i) image.rgb[i] = uint8_t(i * 10);
    const std::vector<float> planar = vision::normalize(image, {0.5f, 0.25f, 0.0f}, {0.5f, 1.0f, 2.0f});
    CHECK(planar[0] == doctest::Approx((0 / 255.0f - 0.5f) / 0.5f));
    CHECK(planar[8 + 1] == doctest::Approx((40 / 255.0f - 0.25f) / 1.0f));  // G of pixel 1
    const std::vector<float> patches = vision::unfold_patches(planar, 4, 2, 2, false);
    REQUIRE(patches.size() == 2 * 12);
    // Patch 1 (x 2..3), channel 2, ky 1, kx 0: pixel (2, 1) = index 6, blue.
    CHECK(patches[12 + 2 * 4 + 1 * 2 + 0] == planar[2 * 8 + 6]);
    CHECK(vision::content_hash(image) != vision::content_hash(vision::Image{2, 4, image.rgb}));
}
