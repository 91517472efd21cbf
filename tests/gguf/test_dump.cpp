// The `vkllm info` listing.
#include <doctest/doctest.h>

#include "gguf/dump.h"
#include "gguf/reader.h"
#include "gguf/writer.h"
#include "samples.h"

using namespace vkllm::gguf;

TEST_CASE("the listing shows header, each key with its type and value, the tensor table and totals") {
    const File f = File::from_bytes(test::sample_file(), "sample.gguf");
    const std::string text = dump(f);
    CHECK(text.starts_with("sample.gguf: GGUF v3, alignment 32, 16 metadata keys, 4 tensors"));
    CHECK(text.find("general.architecture") != std::string::npos);
    CHECK(text.find("= \"llama\"") != std::string::npos);
    CHECK(text.find("[string; 3]") != std::string::npos);
    CHECK(text.find("= [\"<s>\", \"\", \"hello world\"]") != std::string::npos);
    CHECK(text.find("[[u16; 2]; 2]") != std::string::npos);
    CHECK(text.find("= [[1, 2], []]") != std::string::npos);
    CHECK(text.find("= -1152921504606846976") != std::string::npos);
    CHECK(text.find("= true") != std::string::npos);
    CHECK(text.find("q4k.weight") != std::string::npos);
    CHECK(text.find("256 x 2") != std::string::npos);
    CHECK(text.find("totals: 4 tensors (f16: 1, f32: 1, q4_K: 1, q8_0: 1), 960 parameters, 1132 bytes") !=
          std::string::npos);
}

TEST_CASE("long arrays and strings are summarized; control bytes are escaped") {
    Writer w;
    std::vector<int32_t> many(1000);
    for (int i = 0; i < 1000; ++i) many[size_t(i)] = i;
    w.add_array<int32_t>("many", many);
    w.add_string("long", std::string(500, 'a'));
    w.add_string("odd", std::string("tab\there \"quoted\"\x01", 18));
    const std::string text = dump(File::from_bytes(w.bytes()), {.array_items = 3, .string_chars = 10});
    CHECK(text.find("[i32; 1000]") != std::string::npos);
    CHECK(text.find("= [0, 1, 2, ... 997 more]") != std::string::npos);
    CHECK(text.find("= \"aaaaaaaaaa\"... (500 bytes)") != std::string::npos);
    CHECK(text.find("= \"tab\\there \\\"\"... (18 bytes)") != std::string::npos);
    const std::string full = dump(File::from_bytes(w.bytes()), {.array_items = 2000, .string_chars = 2000});
    CHECK(full.find("\\\"quoted\\\"\\x01\"") != std::string::npos);
    CHECK(full.find("998, 999]") != std::string::npos);
}
