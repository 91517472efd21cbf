#include "samples.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <random>

#include "core/error.h"
#include "gguf/quants.h"
#include "gguf/writer.h"

namespace vkllm::gguf::test {

std::vector<std::filesystem::path> shared_ggufs() {
    std::vector<std::filesystem::path> out;
    const std::filesystem::path shared = VKLLM_SHARED_DIR;
    if (!std::filesystem::is_directory(shared)) return out;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(shared))
        if (entry.is_regular_file() && entry.path().extension() == ".gguf") out.push_back(entry.path());
    std::sort(out.begin(), out.end());
    return out;
}

std::vector<std::byte> sample_file() {
    Writer w;
    w.add_string("general.architecture", "llama");
    w.add_u8("test.u8", 200);
    w.add_i8("test.i8", -100);
    w.add_u16("test.u16", 60000);
    w.add_i16("test.i16", -30000);
    w.add_u32("test.u32", 4000000000u);
    w.add_i32("test.i32", -2000000000);
    w.add_u64("test.u64", 1ull << 60);
    w.add_i64("test.i64", -(1ll << 60));
    w.add_f32("test.f32", 0.125f);
    w.add_f64("test.f64", -2.5);
    w.add_bool("test.bool", true);
    const std::vector<float> scores = {0.5f, -1.0f, 3.25f};
    w.add_array<float>("test.f32_array", scores);
    const std::vector<int32_t> types = {1, -2, 3};
    w.add_array<int32_t>("test.i32_array", types);
    const std::vector<std::string_view> tokens = {"<s>", "", "hello world"};
    w.add_string_array("test.string_array", tokens);

    const std::vector<std::byte> nested = [] {  // [[1, 2], []] of u16, built through a reader round trip
        Writer inner;
        const std::vector<uint16_t> a = {1, 2}, b = {};
        inner.add_array<uint16_t>("a", a);
        inner.add_array<uint16_t>("b", b);
        return inner.bytes();
    }();
    const File inner = File::from_bytes(nested);
    Value array_of_arrays;
    array_of_arrays.type = ValueType::Array;
    array_of_arrays.element_type = ValueType::Array;
    array_of_arrays.count = 2;
    array_of_arrays.arrays = {*inner.find("a"), *inner.find("b")};
    w.add_value("test.nested", array_of_arrays);

    std::mt19937 rng(7);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    const auto values = [&](size_t n) {
        std::vector<float> v(n);
        for (float& x : v) x = normal(rng);
        return v;
    };
    const std::vector<uint64_t> vector_shape = {64}, matrix_shape = {64, 3}, k_shape = {256, 2};
    w.add_tensor("norm.weight", GgmlType::F32, vector_shape, quantize(GgmlType::F32, values(64)));
    w.add_tensor("half.weight", GgmlType::F16, matrix_shape, quantize(GgmlType::F16, values(192)));
    w.add_tensor("q8.weight", GgmlType::Q8_0, matrix_shape, quantize(GgmlType::Q8_0, values(192)));
    w.add_tensor("q4k.weight", GgmlType::Q4_K, k_shape, quantize(GgmlType::Q4_K, values(512)));
    return w.bytes();
}

size_t tensor_info_offset(const std::vector<std::byte>& file, std::string_view name) {
    // A tensor info starts with the u64 name length followed by the name bytes.
    std::vector<std::byte> needle(8 + name.size());
    const uint64_t length = name.size();
    std::memcpy(needle.data(), &length, 8);
    std::memcpy(needle.data() + 8, name.data(), name.size());
    size_t found = file.size();
    for (auto it = file.begin(); (it = std::search(it, file.end(), needle.begin(), needle.end())) != file.end(); ++it)
        found = size_t(it - file.begin());  // the last match: tensor infos follow the metadata
    if (found == file.size()) fail("test file has no tensor '{}'", name);
    return found;
}

std::vector<std::byte> read_bytes(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::vector<std::byte> bytes(std::filesystem::file_size(path));
    in.read(reinterpret_cast<char*>(bytes.data()), std::streamsize(bytes.size()));
    return bytes;
}

TempDir::TempDir() {
    std::random_device seed;
    path_ = std::filesystem::temp_directory_path() / fmt::format("vkllm-gguf-test-{:08x}", seed());
    std::filesystem::create_directories(path_);
}

TempDir::~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
}

}  // namespace vkllm::gguf::test
