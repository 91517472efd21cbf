// The encoders against llama.cpp's projector output on the vision fixtures.
#include <doctest/doctest.h>

#include "fixture_check.h"
#include "gpu_fixture.h"
#include "vision/encoder.h"
#include "vision/preprocess.h"

using namespace vkllm;

namespace {

// Relative RMS of the embeddings against image_embd.f32 of a fixture, or a negative value when absent.
double embedding_error(const std::string& fixture, double& encode_ms, std::string& memory) {
    auto dir = test::fixture_dir("vision/" + fixture);
    if (dir.empty()) return -1;
    gguf::File mmproj = gguf::File::open(dir / "mmproj.gguf");
    vision::Encoder encoder(test::device(), mmproj);
    const vision::Image image = vision::load_image(dir / "chelsea.png");
    const vision::ImageEmbeddings& got = encoder.encode(image);
    CHECK(encoder.positions(image) == got.n_tokens);
    encode_ms = encoder.last_stats().milliseconds;
    memory = fmt::format("{} weight bytes, {} activation bytes, {} input/output bytes", encoder.weight_bytes(),
                         encoder.last_stats().transient_bytes, encoder.last_stats().input_bytes);
    std::vector<float> want = test::read_f32(dir / "image_embd.f32");
    REQUIRE(got.values.size() == want.size());
    return test::relative_error(got.values, want);
}

}  // namespace

TEST_CASE("Pixtral and Gemma 3 image embeddings match llama.cpp's") {
    for (auto [name, tolerance] : {std::pair{"pixtral_vis", 1e-3}, std::pair{"gemma3_vis", 1e-2}}) {
        const std::string fixture = name;
        CAPTURE(fixture);
        double encode_ms = 0;
        std::string memory;
        const double error = embedding_error(fixture, encode_ms, memory);
        if (error < 0) continue;
        MESSAGE(fixture << ": relative RMS " << error << ", encoded in " << encode_ms << " ms; " << memory);
        CHECK(error <= tolerance);
    }
}

TEST_CASE("An image's prompt positions are known before it is encoded") {
    for (const char* name : {"pixtral_vis", "gemma3_vis"}) {
        auto dir = test::fixture_dir(std::string("vision/") + name);
        if (dir.empty()) continue;
        CAPTURE(name);
        gguf::File mmproj = gguf::File::open(dir / "mmproj.gguf");
        vision::Encoder encoder(test::device(), mmproj);
        const vision::Image image = vision::load_image(dir / "chelsea.png");
        for (auto [width, height] : {std::pair{37u, 91u}, std::pair{300u, 20u}}) {
            const vision::Image sized = vision::resize(image, width, height, vision::ResizeFilter::Bilinear);
            CHECK(encoder.positions(sized) == encoder.encode(sized).n_tokens);
        }
    }
}
