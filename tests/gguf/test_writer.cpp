// Writer <-> reader round trips: every value is read back as written, byte for byte on re-writing.
#include <doctest/doctest.h>

#include "core/error.h"
#include "gguf/quants.h"
#include "gguf/reader.h"
#include "gguf/writer.h"
#include "samples.h"
#include "test_main.h"

using namespace vkllm::gguf;

namespace {

// Copies every key and tensor of f into a new writer.
Writer copy_of(const File& f) {
    Writer w(f.version());
    for (const KeyValue& kv : f.metadata()) w.add_value(kv.key, kv.value);
    for (const Tensor& t : f.tensors()) w.add_tensor(t.name, t.type, std::span(t.ne.data(), t.n_dims), t.data);
    return w;
}

}  // namespace

TEST_CASE("a writer-made file re-written from what the reader saw is byte-identical") {
    const std::vector<std::byte> bytes = test::sample_file();
    const File f = File::from_bytes(bytes);
    CHECK(copy_of(f).bytes() == bytes);
}

TEST_CASE("real files survive a read-write round trip byte for byte") {
    // ggml writes like our writer: infos in order, each tensor padded to the alignment.
    if (!vkllm::test::shared_path("")) return;
    const auto files = test::shared_ggufs();
    for (const auto& path : files) {
        INFO(path.string());
        const File f = File::open(path);
        CHECK(copy_of(f).bytes() == test::read_bytes(path));
    }
}

TEST_CASE("the writer refuses what the reader would refuse") {
    Writer w;
    w.add_u32("a", 1);
    CHECK_THROWS_AS(w.add_u32("a", 2), vkllm::Error);
    CHECK_THROWS_AS(w.add_u32("", 2), vkllm::Error);
    const std::vector<uint64_t> shape = {33};
    CHECK_THROWS_AS(w.add_tensor("q", GgmlType::Q8_0, shape, std::vector<std::byte>(34)), vkllm::Error);
    const std::vector<uint64_t> five_dims = {1, 1, 1, 1, 1};
    CHECK_THROWS_AS(w.add_tensor("f", GgmlType::F32, five_dims, std::vector<std::byte>(4)), vkllm::Error);
    const std::vector<uint64_t> shape32 = {32};
    CHECK_THROWS_AS(w.add_tensor("short", GgmlType::Q8_0, shape32, std::vector<std::byte>(33)), vkllm::Error);
    w.add_tensor("ok", GgmlType::Q8_0, shape32, std::vector<std::byte>(34));
    CHECK_THROWS_AS(w.add_tensor("ok", GgmlType::Q8_0, shape32, std::vector<std::byte>(34)), vkllm::Error);
    CHECK_THROWS_AS(Writer(1), vkllm::Error);
}

TEST_CASE("a file with metadata only has no data section padding") {
    Writer w;
    w.add_string("general.architecture", "llama");
    const std::vector<std::byte> bytes = w.bytes();
    CHECK(bytes.size() == 4 + 4 + 8 + 8 + (8 + 20) + 4 + (8 + 5));
    const File f = File::from_bytes(bytes);
    CHECK(f.tensors().empty());
    CHECK(f.get_string("general.architecture") == "llama");
}

TEST_CASE("a streamed file equals the one written from memory, and a short tensor is refused") {
    const std::vector<std::byte> bytes = test::sample_file();
    const File f = File::from_bytes(bytes);
    Writer streamed(f.version());
    for (const KeyValue& kv : f.metadata()) streamed.add_value(kv.key, kv.value);
    for (const Tensor& t : f.tensors()) streamed.declare_tensor(t.name, t.type, std::span(t.ne.data(), t.n_dims));
    const auto path = std::filesystem::temp_directory_path() / "vkllm_test_streamed.gguf";
    streamed.write_streaming(path, [&](size_t i, const Writer::TensorSink& sink) {
        const Tensor& t = f.tensors()[i];
        const size_t half = t.data.size() / 2;  // in two pieces, as a converter hands over rows
        sink(t.data.first(half));
        sink(t.data.subspan(half));
    });
    CHECK(test::read_bytes(path) == bytes);
    CHECK_THROWS_AS(streamed.bytes(), vkllm::Error);
    CHECK_THROWS_AS(streamed.write(path), vkllm::Error);
    if (!f.tensors().empty())
        CHECK_THROWS_AS(streamed.write_streaming(path, [](size_t, const Writer::TensorSink&) {}), vkllm::Error);
    std::filesystem::remove(path);
}
