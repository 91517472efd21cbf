// `vkllm convert` on ../shared/fixtures/convert/mistral3_hf: the GGUFs equal llama.cpp's own
// conversion key for key and bit for bit, the text model runs in vkllm to llama.cpp's logits, and
// a damaged checkpoint leaves no output behind.
#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>

#include "../model/fixture_check.h"
#include "convert/convert.h"
#include "core/error.h"
#include "gguf/reader.h"
#include "gguf_compare.h"
#include "gpu_fixture.h"
#include "model/session.h"
#include "test_main.h"

using namespace vkllm;

namespace {

std::filesystem::path fixture() {
    if (!test::shared_path("fixtures/convert/mistral3_hf/hf/config.json")) return {};
    return std::filesystem::path(VKLLM_SHARED_DIR) / "fixtures/convert/mistral3_hf";
}

std::filesystem::path scratch(const std::string& name) {
    return std::filesystem::temp_directory_path() / ("vkllm_test_convert_" + name);
}

// The same keys and values (any order) and the same tensors: names, shapes, types and bytes.
void check_same_gguf(const std::filesystem::path& got_path, const std::filesystem::path& want_path) {
    CAPTURE(want_path.filename().string());
    const gguf::File got = gguf::File::open(got_path), want = gguf::File::open(want_path);
    CHECK(got.metadata().size() == want.metadata().size());
    test::check_same_keys(got, want);
    test::check_same_tensors(got, want);
}

std::vector<float> teacher_forced_logits(const std::filesystem::path& model_path, const std::vector<int32_t>& tokens) {
    gguf::File file = gguf::File::open(model_path);
    auto model = model::load_model(test::device(), file);
    model::Session session(test::device(), *model, {.n_ctx = uint32_t(tokens.size())});
    std::vector<float> logits;
    session.eval(tokens, &logits);
    return logits;
}

}  // namespace

TEST_CASE("converting the Mistral 3 checkpoint gives llama.cpp's GGUFs, and it runs to llama.cpp's logits") {
    const auto dir = fixture();
    if (dir.empty()) return;
    for (auto [type, name] : {std::pair{convert::OutputType::F32, "f32"}, std::pair{convert::OutputType::F16, "f16"}}) {
        CAPTURE(std::string(name));
        const auto model = scratch(std::string(name) + ".gguf"), mmproj = scratch(std::string(name) + "-mmproj.gguf");
        convert::convert({.hf_dir = dir / "hf", .output = model, .mmproj = mmproj, .type = type});
        check_same_gguf(model, dir / fmt::format("ref-{}.gguf", name));
        check_same_gguf(mmproj, dir / fmt::format("ref-mmproj-{}.gguf", name));
        // llama.cpp's logits: of its F32 file for both token files, of its F16 file for the long one
        for (const char* length : {"short", "long"}) {
            const auto reference = dir / fmt::format("logits-{}-{}.f32", name, length);
            if (!std::filesystem::exists(reference)) continue;
            CAPTURE(std::string(length));
            const auto tokens = test::read_tokens(dir / fmt::format("tokens-{}.txt", length));
            std::string detail;
            const bool passed =
                test::meets_criteria(teacher_forced_logits(model, tokens), reference, 2048, false, detail);
            INFO(detail);
            CHECK(passed);
        }
        std::filesystem::remove(model);
        std::filesystem::remove(mmproj);
    }
}

namespace {

// A copy of the fixture checkpoint whose model.safetensors `damage` may change.
std::filesystem::path damaged_copy(const std::filesystem::path& hf, const std::function<void(std::vector<char>&)>& damage) {
    const auto dir = scratch("damaged_hf");
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    for (const auto& entry : std::filesystem::directory_iterator(hf))
        if (entry.path().filename() != "model.safetensors") std::filesystem::copy_file(entry.path(), dir / entry.path().filename());
    std::ifstream in(hf / "model.safetensors", std::ios::binary);
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    damage(bytes);
    std::ofstream(dir / "model.safetensors", std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
    return dir;
}

}  // namespace

TEST_CASE("a truncated checkpoint, or one failing mid-way, is refused and leaves no output file") {
    const auto dir = fixture();
    if (dir.empty()) return;
    const auto output = scratch("damaged.gguf");
    auto partial = output;
    partial += ".part";
    std::filesystem::remove(output);

    const auto truncated = damaged_copy(dir / "hf", [](std::vector<char>& bytes) { bytes.resize(bytes.size() - 100); });
    CHECK_THROWS_WITH_AS(convert::convert({.hf_dir = truncated, .output = output}),
                         doctest::Contains("model.safetensors: tensor 'vision_tower.transformer.layers.2.feed_forward.up_proj."
                                          "weight': data_offsets [762944, 767040] do not lie within the 767004 data bytes"),
                         Error);
    CHECK(!std::filesystem::exists(output));

    // A NaN in the last text tensor: found while quantizing, after most of the file was written.
    const auto with_nan = damaged_copy(dir / "hf", [](std::vector<char>& bytes) {
        uint64_t header = 0;
        std::memcpy(&header, bytes.data(), 8);
        const size_t value = 8 + header + 668160;  // the first of layers.1.self_attn.v_proj.weight
        bytes[value] = char(0xc0), bytes[value + 1] = char(0x7f);
    });
    CHECK_THROWS_WITH_AS(convert::convert({.hf_dir = with_nan, .output = output, .type = convert::OutputType::Q8_0}),
                         doctest::Contains("tensor 'blk.1.attn_v.weight': a value in rows 0 to 32 is not finite"), Error);
    CHECK(!std::filesystem::exists(output));
    CHECK(!std::filesystem::exists(partial));
    std::filesystem::remove_all(truncated);
    std::filesystem::remove_all(with_nan);
}
