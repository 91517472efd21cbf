// tekken.json -> Vocab must equal what llama.cpp's converter wrote into GGUF for the same file,
// so vkllm's converter can write our Vocab and get the same tokenizer.
#include <doctest/doctest.h>

#include "core/error.h"
#include "gguf/reader.h"
#include "tokenizer/tekken.h"
#include "tokenizer/tokenizer.h"
#include "test_main.h"

namespace fs = std::filesystem;
using namespace vkllm::tokenizer;

TEST_CASE("tekken.json loads like llama.cpp's conversion of it (mistral3_hf fixture)") {
    const auto shared_dir = vkllm::test::shared_path("fixtures/convert/mistral3_hf");
    if (!shared_dir) return;
    const fs::path& dir = *shared_dir;
    const Vocab ours = vocab_from_tekken_json(dir / "hf" / "tekken.json");
    const Vocab reference = from_gguf(vkllm::gguf::File::open(dir / "ref-f32.gguf"));
    CHECK(ours.pre == reference.pre);
    CHECK(ours.tokens == reference.tokens);
    CHECK(ours.types == reference.types);
    CHECK(ours.attrs == reference.attrs);
    CHECK(ours.merges == reference.merges);
    CHECK(ours.bos == reference.bos);
    CHECK(ours.eos == reference.eos);
    CHECK(ours.unk == reference.unk);
    CHECK(ours.pad == reference.pad);
    CHECK(ours.eog == reference.eog);
    CHECK(ours.add_bos == reference.add_bos);
    CHECK(ours.add_eos == reference.add_eos);
    CHECK(ours.ignore_merges == reference.ignore_merges);
    CHECK(ours.clean_spaces == reference.clean_spaces);

}

TEST_CASE("malformed tekken.json gives a vkllm::Error naming the file") {
    const char* cases[] = {
        "",
        "{}",
        R"({"config": {"default_num_special_tokens": 2, "default_vocab_size": 1}})",
        R"({"config": {"default_num_special_tokens": 1, "default_vocab_size": 3}, "vocab": [{"rank": 5, "token_bytes": "AA=="}]})",
        R"({"config": {"default_num_special_tokens": 1, "default_vocab_size": 3}, "vocab": [{"rank": 0, "token_bytes": "!!"}]})",
        R"({"config": {"default_num_special_tokens": 1, "default_vocab_size": 3}, "bpe_ranks": "x"})",
    };
    for (const char* text : cases) {
        CAPTURE(text);
        CHECK_THROWS_WITH_AS(vocab_from_tekken_text(text, "bad.json"), doctest::Contains("bad.json"), vkllm::Error);
    }
}
