// Damaged and hostile files: each must give one vkllm::Error line naming the place, never a crash.
// Run under the ASan/UBSan build too (VKLLM_SANITIZE=ON), where any out-of-bounds read would abort.
#include <doctest/doctest.h>

#include <cstring>

#include "core/error.h"
#include "gguf/reader.h"
#include "gguf/writer.h"
#include "samples.h"
#include "test_main.h"

using namespace vkllm::gguf;

namespace {

// Parses bytes; returns the error message, or "" when the file was accepted.
std::string parse_error(std::vector<std::byte> bytes) {
    try {
        File::from_bytes(std::move(bytes), "bad.gguf");
    } catch (const vkllm::Error& error) {
        return error.what();
    }
    return "";
}

void expect_error(std::vector<std::byte> bytes, std::string_view fragment) {
    const std::string error = parse_error(std::move(bytes));
    INFO(error);
    CHECK(error.starts_with("bad.gguf: "));
    CHECK(error.find('\n') == std::string::npos);
    CHECK(error.find(fragment) != std::string::npos);
}

template <class T>
void poke(std::vector<std::byte>& bytes, size_t at, T value) {
    std::memcpy(bytes.data() + at, &value, sizeof(T));
}

// Hand-encoded GGUF pieces, for records the writer refuses to make.
struct Encoder {
    std::vector<std::byte> out;
    template <class T>
    Encoder& put(T value) {
        out.resize(out.size() + sizeof(T));
        std::memcpy(out.data() + out.size() - sizeof(T), &value, sizeof(T));
        return *this;
    }
    Encoder& str(std::string_view s) {
        put<uint64_t>(s.size());
        for (char c : s) out.push_back(std::byte(c));
        return *this;
    }
    Encoder& header(int64_t n_tensors, int64_t n_kv) {
        out.insert(out.end(), {std::byte('G'), std::byte('G'), std::byte('U'), std::byte('F')});
        return put<uint32_t>(3).put<int64_t>(n_tensors).put<int64_t>(n_kv);
    }
    // A tensor info of type t and dims ne at relative data offset 0.
    Encoder& tensor(std::string_view name, std::vector<int64_t> ne, uint32_t type, uint64_t offset = 0) {
        str(name).put<uint32_t>(uint32_t(ne.size()));
        for (int64_t n : ne) put<int64_t>(n);
        return put<uint32_t>(type).put<uint64_t>(offset);
    }
    // Pads to 32 and appends n zero bytes of tensor data.
    Encoder& data(size_t n) {
        out.resize((out.size() + 31) / 32 * 32 + n);
        return *this;
    }
};

// The offset of the u64 length of the metadata key `key` (keys are unique, so the first match).
size_t key_offset(const std::vector<std::byte>& bytes, std::string_view key) {
    const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    const size_t at = text.find(key);
    REQUIRE(at != std::string_view::npos);
    return at - 8;
}

// Where a tensor's fields sit in a file image: its n_dims, type and offset fields.
struct InfoFields {
    size_t n_dims, type, offset;
};

InfoFields info_fields(const std::vector<std::byte>& bytes, std::string_view name, uint32_t n_dims) {
    const size_t start = test::tensor_info_offset(bytes, name) + 8 + name.size();
    return {start, start + 4 + 8 * n_dims, start + 4 + 8 * n_dims + 4};
}

}  // namespace

TEST_CASE("truncating a file anywhere before its last tensor byte is an error") {
    std::vector<std::vector<std::byte>> files = {test::sample_file()};
    for (const char* name : {"fixtures/llama_q4k_q6k/model.gguf", "testdata/tokenizer/llamacpp/ggml-vocab-bert-bge.gguf"})
        if (const auto path = vkllm::test::shared_path(name)) files.push_back(test::read_bytes(*path));
    for (const std::vector<std::byte>& full : files) {
        const File f = File::from_bytes(full);
        uint64_t needed = f.data_offset(0);
        for (const Tensor& t : f.tensors()) needed = std::max(needed, t.offset + t.nbytes);
        if (f.tensors().empty()) needed = f.data_offset(0);
        // Every prefix of the first 16 KiB of the header, then a stride (the parse of a prefix is linear).
        const uint64_t dense = std::min<uint64_t>(f.tensors().empty() ? needed : f.tensors().front().offset, 16384);
        for (uint64_t length = 0; length < needed; length += length < dense ? 1 : 4093) {
            INFO("prefix of " << length << " bytes of " << full.size());
            const std::string error = parse_error({full.begin(), full.begin() + std::ptrdiff_t(length)});
            CHECK(error.starts_with("bad.gguf: "));
            CHECK(error.find('\n') == std::string::npos);
        }
        CHECK(parse_error({full.begin(), full.begin() + std::ptrdiff_t(needed)}).empty());
    }
}

TEST_CASE("any 8 header bytes overwritten with extreme values give an error or a valid file") {
    std::vector<std::byte> full = test::sample_file();
    const uint64_t header = File::from_bytes(full).tensors().front().offset;
    const uint64_t extremes[] = {~0ull, 1ull << 63, (1ull << 63) - 1, 1ull << 32, 0xFFFFFFFFull, 0};
    for (size_t at = 0; at + 8 <= header; ++at) {
        for (uint64_t value : extremes) {
            std::vector<std::byte> bad = full;
            poke(bad, at, value);
            const std::string error = parse_error(std::move(bad));
            CHECK(error.find('\n') == std::string::npos);
        }
    }
}

TEST_CASE("counts and lengths flipped to huge values are checked before anything is allocated") {
    const std::vector<std::byte> sample = test::sample_file();
    std::vector<std::byte> bad = sample;
    poke<int64_t>(bad, 8, int64_t(1) << 60);
    expect_error(bad, "tensor count 1152921504606846976 cannot fit in the");
    bad = sample;
    poke<int64_t>(bad, 16, int64_t(1) << 60);
    expect_error(bad, "metadata count 1152921504606846976 cannot fit");
    bad = sample;
    poke<int64_t>(bad, 16, -1);
    expect_error(bad, "metadata count -1 is negative at offset 0x10");
    bad = sample;
    poke<uint64_t>(bad, key_offset(sample, "test.u16"), ~0ull);
    expect_error(bad, "metadata entry 3: key length 18446744073709551615 runs past the end of the file");
    // The element count of the string array, then the length of its first string.
    const size_t array_count = key_offset(sample, "test.string_array") + 8 + 17 + 4 + 4;
    bad = sample;
    poke<uint64_t>(bad, array_count, 1ull << 61);
    expect_error(bad, "key 'test.string_array': array length 2305843009213693952 cannot fit");
    bad = sample;
    poke<uint64_t>(bad, array_count + 8, 1ull << 40);
    expect_error(bad, "key 'test.string_array': string length 1099511627776 runs past the end");
    const size_t f32_count = key_offset(sample, "test.f32_array") + 8 + 14 + 4 + 4;
    bad = sample;
    poke<uint64_t>(bad, f32_count, 1ull << 62);
    expect_error(bad, "key 'test.f32_array': array length 4611686018427387904 cannot fit");
}

TEST_CASE("tensor offsets must be aligned, inside the file and not overlap") {
    const std::vector<std::byte> sample = test::sample_file();
    const InfoFields half = info_fields(sample, "half.weight", 2);
    const InfoFields q8 = info_fields(sample, "q8.weight", 2);
    uint64_t half_offset;
    std::memcpy(&half_offset, sample.data() + half.offset, 8);

    std::vector<std::byte> bad = sample;
    poke<uint64_t>(bad, half.offset, half_offset + 4);
    expect_error(bad, "tensor 'half.weight': data offset");
    expect_error(bad, "is not a multiple of the alignment 32");
    bad = sample;
    poke<uint64_t>(bad, q8.offset, half_offset + 32);
    expect_error(bad, "tensor 'q8.weight': data at");
    expect_error(bad, "overlaps tensor 'half.weight'");
    bad = sample;
    poke<uint64_t>(bad, q8.offset, uint64_t(sample.size()));
    expect_error(bad, "tensor 'q8.weight': 204 bytes at data offset");
    expect_error(bad, "run past the end of the file");
    bad = sample;
    poke<uint64_t>(bad, q8.offset, ~uint64_t(31));
    expect_error(bad, "run past the end of the file");
}

TEST_CASE("unknown and removed type ids are errors naming the tensor") {
    const std::vector<std::byte> sample = test::sample_file();
    const InfoFields q8 = info_fields(sample, "q8.weight", 2);
    for (uint32_t id : {4u, 5u, 31u, 36u, 43u, 1000u, ~0u}) {
        std::vector<std::byte> bad = sample;
        poke<uint32_t>(bad, q8.type, id);
        expect_error(bad, fmt::format("tensor 'q8.weight': unknown ggml type id {} at offset {:#x}", id, q8.type));
    }
}

TEST_CASE("absurd dimensions are errors") {
    const std::vector<std::byte> sample = test::sample_file();
    const InfoFields half = info_fields(sample, "half.weight", 2);
    std::vector<std::byte> bad = sample;
    poke<uint32_t>(bad, half.n_dims, 5);
    expect_error(bad, "tensor 'half.weight': has 5 dimensions; at most 4 are allowed");
    bad = sample;
    poke<int64_t>(bad, half.n_dims + 4, 0);
    expect_error(bad, "ne[0] = 0 is not positive");
    bad = sample;
    poke<int64_t>(bad, half.n_dims + 12, -3);
    expect_error(bad, "ne[1] = -3 is not positive");

    expect_error(Encoder{}.header(1, 0).tensor("big", {1ll << 40, 1ll << 40}, 0).data(0).out,
                 "tensor 'big': element count overflows at ne[1] = 1099511627776");
    expect_error(Encoder{}.header(1, 0).tensor("big", {1ll << 32, 1ll << 30}, 0).data(0).out,
                 "tensor 'big': byte size of shape 4294967296 x 1073741824 overflows");  // elements fit int64, bytes do not
    expect_error(Encoder{}.header(1, 0).tensor("wide", {(1ll << 62) + 32}, 0).data(128).out,
                 "tensor 'wide': byte size of shape 4611686018427387936 overflows");  // found by the fuzzer
    expect_error(Encoder{}.header(1, 0).tensor("odd", {33, 2}, 8).data(68).out,
                 "tensor 'odd': ne[0] = 33 is not a multiple of the q8_0 block size 32");
    expect_error(Encoder{}.header(1, 0).tensor("huge", {1ll << 20, 1ll << 20}, 0).data(64).out,
                 "tensor 'huge': 4398046511104 bytes at data offset 0x0 run past the end of the file");
}

TEST_CASE("duplicate keys and tensor names, empty and overlong names are errors") {
    std::vector<std::byte> bad = test::sample_file();
    const size_t u8_key = key_offset(bad, "test.u8") + 8;
    std::memcpy(bad.data() + u8_key, "test.i8", 7);  // the two keys now collide
    expect_error(bad, "key 'test.i8': duplicate key at offset");

    bad = test::sample_file();
    const size_t half_name = test::tensor_info_offset(bad, "half.weight") + 8;
    std::memcpy(bad.data() + half_name, "norm", 4);
    expect_error(bad, "tensor 'norm.weight': duplicate tensor name");

    expect_error(Encoder{}.header(0, 1).str("").put<uint32_t>(4).put<uint32_t>(1).out, "key is empty at offset 0x18");
    expect_error(Encoder{}.header(1, 0).tensor("", {32}, 0).data(128).out, "tensor 0: name is empty");
    expect_error(Encoder{}.header(1, 0).tensor(std::string(64, 'x'), {32}, 0).data(128).out,
                 "name is 64 bytes, longer than ggml's limit of 63");
}

TEST_CASE("bad values: unknown value types, bools, deep nesting, alignment") {
    expect_error(Encoder{}.header(0, 1).str("k").put<uint32_t>(13).put<uint32_t>(0).out,
                 "key 'k': unknown value type 13 at offset 0x21");
    expect_error(Encoder{}.header(0, 1).str("k").put<uint32_t>(9).put<uint32_t>(77).put<uint64_t>(0).out,
                 "key 'k': unknown array element type 77");
    expect_error(Encoder{}.header(0, 1).str("k").put<uint32_t>(7).put<uint8_t>(2).out,
                 "key 'k': bool value 2 is neither 0 nor 1");
    Encoder deep;
    deep.header(0, 1).str("k").put<uint32_t>(9);
    for (int depth = 0; depth < 20; ++depth) deep.put<uint32_t>(9).put<uint64_t>(1);
    expect_error(deep.out, "key 'k': arrays nested deeper than 8");
    Encoder wide;
    wide.header(0, 1).str("k").put<uint32_t>(9).put<uint32_t>(9).put<uint64_t>(70000);
    for (int i = 0; i < 70000; ++i) wide.put<uint32_t>(0).put<uint64_t>(0);
    expect_error(wide.out, "key 'k': arrays of arrays hold more than 65536 items in all");
    expect_error(Encoder{}.header(0, 1).str("general.alignment").put<uint32_t>(4).put<uint32_t>(48).out,
                 "key 'general.alignment': alignment 48 is not a power of two");
    expect_error(Encoder{}.header(0, 1).str("general.alignment").put<uint32_t>(4).put<uint32_t>(0).out,
                 "alignment 0 is not a power of two");
    expect_error(Encoder{}.header(0, 1).str("general.alignment").put<uint32_t>(10).put<uint64_t>(32).out,
                 "key 'general.alignment': type is u64, expected u32");
}

TEST_CASE("magic and version") {
    expect_error({}, "magic of 4 bytes runs past the end of the file (0 bytes) at offset 0x0");
    std::vector<std::byte> bad = test::sample_file();
    bad[0] = std::byte('X');
    expect_error(bad, "not a GGUF file (no 'GGUF' magic) at offset 0x0");
    bad = test::sample_file();
    poke<uint32_t>(bad, 4, 0x03000000);
    expect_error(bad, "looks byte-swapped; big-endian GGUF is not supported");
    poke<uint32_t>(bad, 4, 4);
    expect_error(bad, "unsupported GGUF version 4");
}
