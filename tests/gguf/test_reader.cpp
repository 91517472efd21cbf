// Reading GGUF: typed metadata access, tensor infos, alignment, versions, split files, real files.
#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>

#include "core/error.h"
#include "gguf/quants.h"
#include "gguf/reader.h"
#include "gguf/writer.h"
#include "samples.h"
#include "test_main.h"

using namespace vkllm::gguf;
using vkllm::gguf::test::TempDir;

namespace {

void write_file(const std::filesystem::path& path, const std::vector<std::byte>& bytes) {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}

std::string error_of(const auto& action) {
    try {
        action();
    } catch (const vkllm::Error& error) {
        return error.what();
    }
    return "no error";
}

}  // namespace

TEST_CASE("typed getters read every value type and widen integers only when the value fits") {
    const File f = File::from_bytes(test::sample_file(), "sample.gguf");
    CHECK(f.version() == 3);
    CHECK(f.get_string("general.architecture") == "llama");
    CHECK(f.get_u32("test.u8") == 200u);
    CHECK(f.get_i32("test.i8") == -100);
    CHECK(f.get_u32("test.u16") == 60000u);
    CHECK(f.get_i64("test.i16") == -30000);
    CHECK(f.get_u32("test.u32") == 4000000000u);
    CHECK(f.get_i32("test.i32") == -2000000000);
    CHECK(f.get_u64("test.u64") == (1ull << 60));
    CHECK(f.get_i64("test.i64") == -(1ll << 60));
    CHECK(f.get_f32("test.f32") == 0.125f);
    CHECK(f.get_f64("test.f32") == 0.125);
    CHECK(f.get_f64("test.f64") == -2.5);
    CHECK(f.get_bool("test.bool") == true);
    CHECK_FALSE(f.get_u32("no.such.key").has_value());

    // Lossless only: a negative value has no unsigned form, 4e9 does not fit i32, f64 is not f32.
    CHECK(error_of([&] { (void)f.get_u32("test.i8"); }).find("does not fit u32") != std::string::npos);
    CHECK(error_of([&] { (void)f.get_i32("test.u32"); }).find("does not fit i32") != std::string::npos);
    CHECK(error_of([&] { (void)f.get_u64("test.i32"); }).find("does not fit u64") != std::string::npos);
    CHECK(error_of([&] { (void)f.get_f32("test.f64"); }).find("is f64, expected f32") != std::string::npos);
    const std::string wrong = error_of([&] { (void)f.get_string("test.u8"); });
    CHECK(wrong.find("sample.gguf: key 'test.u8' at offset 0x") == 0);
    CHECK(wrong.find("is u8, expected string") != std::string::npos);
}

TEST_CASE("arrays: strings as views, numbers converted, nested arrays as values") {
    const File f = File::from_bytes(test::sample_file());
    const auto tokens = f.get_string_array("test.string_array");
    REQUIRE(tokens);
    REQUIRE(tokens->size() == 3);
    CHECK((*tokens)[0] == "<s>");
    CHECK((*tokens)[1].empty());
    CHECK((*tokens)[2] == "hello world");
    CHECK(f.get_f32_array("test.f32_array") == std::vector<float>{0.5f, -1.0f, 3.25f});
    CHECK(f.get_i32_array("test.i32_array") == std::vector<int32_t>{1, -2, 3});
    CHECK(error_of([&] { (void)f.get_u32_array("test.i32_array"); }).find("item 1 holds -2") != std::string::npos);
    CHECK(error_of([&] { (void)f.get_string_array("test.f32_array"); }).find("is array of f32") != std::string::npos);

    // Empty arrays are empty vectors (an empty f32 array once reached memcpy with null pointers,
    // which the GGUF fuzzer found under UBSan).
    Writer empty;
    empty.add_array("test.no_f32", std::span<const float>());
    empty.add_array("test.no_i32", std::span<const int32_t>());
    const File without_items = File::from_bytes(empty.bytes());
    CHECK(without_items.get_f32_array("test.no_f32") == std::vector<float>{});
    CHECK(without_items.get_i32_array("test.no_i32") == std::vector<int32_t>{});

    const Value* nested = f.find("test.nested");
    REQUIRE(nested);
    CHECK(nested->element_type == ValueType::Array);
    REQUIRE(nested->count == 2);
    const Value first = nested->item(0);
    CHECK(first.element_type == ValueType::U16);
    REQUIRE(first.count == 2);
    CHECK(first.item(1).unsigned_value == 2);
    CHECK(nested->item(1).count == 0);
}

TEST_CASE("tensor infos: shape, type, aligned offsets and data views") {
    const std::vector<std::byte> bytes = test::sample_file();
    const File f = File::from_bytes(bytes);
    REQUIRE(f.tensors().size() == 4);
    const Tensor& q4k = f.tensor("q4k.weight");
    CHECK(q4k.type == GgmlType::Q4_K);
    CHECK(q4k.n_dims == 2);
    CHECK(q4k.ne == std::array<uint64_t, 4>{256, 2, 1, 1});
    CHECK(q4k.nbytes == 2 * 144);
    CHECK(q4k.row_bytes() == 144);
    CHECK(q4k.shape_string() == "256 x 2");
    for (const Tensor& t : f.tensors()) {
        CHECK(t.offset % 32 == 0);
        CHECK(t.offset >= f.data_offset(0));
        CHECK(t.data.size() == t.nbytes);
    }
    CHECK(f.find_tensor("missing") == nullptr);
    CHECK(error_of([&] { (void)f.tensor("missing"); }).find("tensor 'missing' is missing") != std::string::npos);
}

TEST_CASE("opening from disk maps the same bytes; version 2 reads like 3; version 1 is refused") {
    TempDir dir;
    const std::vector<std::byte> bytes = test::sample_file();
    write_file(dir.path() / "sample.gguf", bytes);
    const File mapped = File::open(dir.path() / "sample.gguf");
    const File memory = File::from_bytes(bytes);
    REQUIRE(mapped.tensors().size() == memory.tensors().size());
    for (size_t i = 0; i < mapped.tensors().size(); ++i) {
        const Tensor& a = mapped.tensors()[i];
        const Tensor& b = memory.tensors()[i];
        CHECK(a.name == b.name);
        CHECK(std::equal(a.data.begin(), a.data.end(), b.data.begin(), b.data.end()));
    }

    std::vector<std::byte> v2 = bytes;
    v2[4] = std::byte{2};
    CHECK(File::from_bytes(v2).version() == 2);
    std::vector<std::byte> v1 = bytes;
    v1[4] = std::byte{1};
    CHECK(error_of([&] { File::from_bytes(v1, "old.gguf"); }) ==
          "old.gguf: GGUF version 1 is not supported (only versions 2 and 3) at offset 0x4");
    CHECK(error_of([&] { File::open(dir.path() / "absent.gguf"); }).find("cannot open") != std::string::npos);
    CHECK(error_of([&] { File::open(dir.path()); }).find("not a regular file") != std::string::npos);
}

TEST_CASE("general.alignment moves the data section and every tensor to its multiple") {
    Writer w;
    w.add_u32("general.alignment", 256);
    const std::vector<float> values(96, 1.0f);
    const std::vector<uint64_t> shape = {96};
    w.add_tensor("a", GgmlType::F32, shape, quantize(GgmlType::F32, values));
    w.add_tensor("b", GgmlType::F16, shape, quantize(GgmlType::F16, values));
    const File f = File::from_bytes(w.bytes());
    CHECK(f.alignment() == 256);
    CHECK(f.tensor("a").offset % 256 == 0);
    CHECK(f.tensor("b").offset % 256 == 0);
    CHECK(f.tensor("b").offset - f.tensor("a").offset == 512);
}

TEST_CASE("types vkllm does not run load as metadata, and require_supported names them") {
    Writer w;
    const std::vector<uint64_t> shape = {256, 2};
    w.add_tensor("blk.0.ffn_down.weight", GgmlType::Q2_K, shape, std::vector<std::byte>(2 * 84));
    w.add_tensor("blk.0.ffn_up.weight", GgmlType::Q4_K, shape, std::vector<std::byte>(2 * 144));
    const File f = File::from_bytes(w.bytes(), "m.gguf");
    CHECK_NOTHROW(f.require_supported(f.tensor("blk.0.ffn_up.weight")));
    const std::string error = error_of([&] { f.require_supported(f.tensor("blk.0.ffn_down.weight")); });
    CHECK(error.find("m.gguf: tensor 'blk.0.ffn_down.weight' at offset 0x") == 0);
    CHECK(error.find("has type q2_K, which vkllm does not run") != std::string::npos);
}

namespace {

// Writes a model as `count` split parts in dir, `per_part` tensors each, with the split keys.
void write_split(const std::filesystem::path& dir, int count, int per_part, int declared_total) {
    for (int k = 0; k < count; ++k) {
        Writer w;
        if (k == 0) w.add_string("general.architecture", "llama");
        w.add_u16("split.no", uint16_t(k));
        w.add_u16("split.count", uint16_t(count));
        w.add_i32("split.tensors.count", declared_total);
        for (int i = 0; i < per_part; ++i) {
            const std::vector<float> values(32, float(k * per_part + i));
            const std::vector<uint64_t> shape = {32};
            w.add_tensor(fmt::format("t{}", k * per_part + i), GgmlType::F32, shape, quantize(GgmlType::F32, values));
        }
        w.write(dir / fmt::format("model-{:05}-of-{:05}.gguf", k + 1, count));
    }
}

}  // namespace

TEST_CASE("split files: all parts open from the first, tensors come from each part") {
    TempDir dir;
    write_split(dir.path(), 3, 2, 6);
    const File f = File::open(dir.path() / "model-00001-of-00003.gguf");
    CHECK(f.n_parts() == 3);
    CHECK(f.get_string("general.architecture") == "llama");
    REQUIRE(f.tensors().size() == 6);
    for (int i = 0; i < 6; ++i) {
        const Tensor& t = f.tensor(fmt::format("t{}", i));
        CHECK(t.part == uint32_t(i / 2));
        CHECK(dequantize(t)[0] == float(i));
    }
    CHECK(error_of([&] { File::open(dir.path() / "model-00002-of-00003.gguf"); })
              .find("is part 2 of a 3-part split model; open the first part") != std::string::npos);
    std::filesystem::remove(dir.path() / "model-00003-of-00003.gguf");
    CHECK(error_of([&] { File::open(dir.path() / "model-00001-of-00003.gguf"); })
              .find("model-00003-of-00003.gguf: cannot open") != std::string::npos);
}

TEST_CASE("split files: a wrong declared tensor count is an error") {
    TempDir dir;
    write_split(dir.path(), 2, 1, 5);
    CHECK(error_of([&] { File::open(dir.path() / "model-00001-of-00002.gguf"); })
              .find("key 'split.tensors.count' says 5 tensors, but the 2 parts hold 2") != std::string::npos);
}

TEST_CASE("every GGUF in ../shared opens, and known files hold what their manifest says") {
    if (!vkllm::test::shared_path("")) return;
    const auto files = test::shared_ggufs();
    for (const auto& path : files) {
        INFO(path.string());
        const File f = File::open(path);
        CHECK(f.version() >= 2);
        CHECK(f.get_string("general.architecture").has_value());
    }
    const auto stories = vkllm::test::shared_path("testdata/models/stories260K.gguf");
    REQUIRE(stories);
    const File f = File::open(*stories);
    CHECK(f.tensors().size() == 48);
    CHECK(f.get_string_array("tokenizer.ggml.tokens")->size() == 512);
    CHECK(f.get_u32("llama.block_count") == 5u);
    CHECK(f.get_u32("llama.embedding_length") == 64u);
    CHECK(f.get_f32("llama.attention.layer_norm_rms_epsilon") == 1e-5f);
    CHECK(f.tensor("token_embd.weight").ne == std::array<uint64_t, 4>{64, 512, 1, 1});
}

TEST_CASE("a file read into memory (--no-mmap) holds the mapped bytes, and released tensors still read them") {
    for (const std::filesystem::path& path : test::shared_ggufs()) {
        const File mapped = File::open(path);
        if (std::ranges::none_of(mapped.tensors(), [](const Tensor& tensor) { return tensor.nbytes >= 16384; })) continue;
        const File read = File::open(path, ReadMode::Read);
        REQUIRE(mapped.tensors().size() == read.tensors().size());
        const auto same = [&] {
            for (size_t i = 0; i < mapped.tensors().size(); ++i) {
                const Tensor &a = mapped.tensors()[i], &b = read.tensors()[i];
                if (a.data.data() == b.data.data() || !std::ranges::equal(a.data, b.data)) return false;
            }
            return true;
        };
        CHECK(same());
        // Whole pages of the larger tensors leave both: the mapping drops them, the read copy maps the
        // file in their place; either way the bytes read the same afterwards.
        for (size_t i = 0; i < mapped.tensors().size(); ++i) {
            mapped.release(mapped.tensors()[i]);
            read.release(read.tensors()[i]);
        }
        CHECK(same());
        return;  // one file is enough
    }
}
