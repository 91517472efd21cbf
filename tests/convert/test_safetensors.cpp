// The safetensors reader: what it reads back, and a clear vkllm::Error for every kind of damage.
#include <doctest/doctest.h>

#include <filesystem>

#include "convert/convert.h"
#include "convert/safetensors.h"
#include "core/error.h"
#include "safetensors_writer.h"

using namespace vkllm;
using convert::SafetensorsFile;

namespace {

std::vector<test::StTensor> sample_tensors() {
    return {test::bf16_tensor("a.weight", {2, 3}, {1, -2, 3.5f, 0.25f, -0.125f, 100}),
            test::f32_tensor("b.bias", {3}, {0.1f, 0.2f, 0.3f})};
}

// The message of the error parsing `bytes` throws (fails the test when it parses).
std::string parse_error(const std::vector<std::byte>& bytes) {
    try {
        (void)SafetensorsFile::from_bytes(bytes, "bad.safetensors");
    } catch (const Error& error) {
        return error.what();
    }
    FAIL("the damaged file parsed");
    return {};
}

}  // namespace

TEST_CASE("a safetensors file reads back its tensors, shapes and values") {
    const SafetensorsFile file = SafetensorsFile::from_bytes(test::safetensors_bytes(sample_tensors()), "ok");
    REQUIRE(file.tensors().size() == 2);
    const convert::SafeTensor& a = file.tensors()[0];
    CHECK(a.name == "a.weight");
    CHECK(a.dtype == convert::Dtype::BF16);
    CHECK(a.shape == std::vector<uint64_t>{2, 3});
    std::vector<float> values(6);
    convert::decode(a, 0, values);
    CHECK(values == std::vector<float>{1, -2, 3.5f, 0.25f, -0.125f, 100});
    std::vector<float> bias(3);
    convert::decode(file.tensors()[1], 0, bias);
    CHECK(bias == std::vector<float>{0.1f, 0.2f, 0.3f});
}

TEST_CASE("every truncation of a safetensors file is refused with a message naming the file") {
    const std::vector<std::byte> bytes = test::safetensors_bytes(sample_tensors());
    for (size_t size = 0; size < bytes.size(); ++size) {
        CAPTURE(size);
        const std::string message = parse_error({bytes.begin(), bytes.begin() + ptrdiff_t(size)});
        CHECK(message.starts_with("bad.safetensors: "));
    }
}

TEST_CASE("damaged safetensors headers are refused with a message naming the tensor") {
    struct Case {
        std::string header;
        size_t data_size;
        std::string expected;  // a piece of the message
    };
    const Case cases[] = {
        {R"({"t": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]})", 8, "does not parse"},
        {R"([1, 2])", 0, "not an object"},
        {R"({"t": {"dtype": "I64", "shape": [1], "data_offsets": [0, 8]}})", 8, "'t' has dtype 'I64'"},
        {R"({"t": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}})", 8, "'t': 8 bytes at offset"},
        {R"({"t": {"dtype": "F32", "shape": [2], "data_offsets": [0, 16]}})", 8, "do not lie within the 8 data"},
        {R"({"t": {"dtype": "F32", "shape": [2], "data_offsets": [8, 0]}})", 8, "do not lie within"},
        {R"({"t": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}})", 8, "not a non-negative integer"},
        {R"({"t": {"dtype": "F32", "shape": [2]}})", 8, "'t' has no 'data_offsets'"},
        {R"({"t": {"dtype": "F32", "shape": [4294967296, 4294967296], "data_offsets": [0, 8]}})", 8, "overflows"},
        {R"({"t": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}, "u": {"dtype": "F16", "shape": [2], "data_offsets": [4, 8]}})",
         8, "'t' and 'u' overlap"},
    };
    for (const Case& c : cases) {
        CAPTURE(c.header);
        const std::string message = parse_error(test::safetensors_with_header(c.header, c.data_size));
        CHECK(message.find(c.expected) != std::string::npos);
        CHECK(message.starts_with("bad.safetensors: "));
    }
    std::vector<std::byte> huge_length = test::safetensors_bytes(sample_tensors());
    huge_length[7] = std::byte{0x7f};
    CHECK(parse_error(huge_length).find("header length") != std::string::npos);
}

TEST_CASE("a checkpoint spans its shards and refuses a tensor named twice") {
    const auto dir = std::filesystem::temp_directory_path() / "vkllm_test_shards";
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    std::vector<test::StTensor> tensors = sample_tensors();
    test::write_file(dir / "model-00001-of-00002.safetensors", test::safetensors_bytes({tensors[0]}));
    test::write_file(dir / "model-00002-of-00002.safetensors", test::safetensors_bytes({tensors[1]}));
    const convert::Checkpoint checkpoint = convert::Checkpoint::open(dir);
    CHECK(checkpoint.files().size() == 2);
    CHECK(checkpoint.tensor("b.bias").file.ends_with("model-00002-of-00002.safetensors"));
    CHECK_THROWS_WITH_AS(checkpoint.tensor("c"), doctest::Contains("has no tensor 'c'"), Error);

    test::write_file(dir / "model-00002-of-00002.safetensors", test::safetensors_bytes(tensors));
    CHECK_THROWS_WITH_AS(convert::Checkpoint::open(dir), doctest::Contains("tensor 'a.weight' is also in"), Error);
    std::filesystem::remove_all(dir);
}
