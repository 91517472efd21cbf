// sentencepiece_fuzz_seeds OUT_DIR: seed inputs for the tokenizer.model reader's fuzzer: a small
// model with every field the reader keeps, with and without fields it must skip.
#include <cstdio>
#include <filesystem>

#include "safetensors_writer.h"
#include "sentencepiece_writer.h"

using namespace vkllm;

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: sentencepiece_fuzz_seeds OUT_DIR\n");
        return 1;
    }
    const std::filesystem::path out = argv[1];
    std::filesystem::create_directories(out);
    convert::SentencePieceModel model;
    model.pieces = {{"<unk>", 0, convert::PieceType::Unknown}, {"<s>", 0, convert::PieceType::Control},
                    {"<0x0A>", 0, convert::PieceType::Byte}, {"\xE2\x96\x81" "a", -1.0f, convert::PieceType::Normal}};
    model.model_type = convert::SpmModelType::Bpe;
    model.byte_fallback = true;
    test::write_file(out / "plain.model", test::sentencepiece_bytes(model, false));
    test::write_file(out / "unknown_fields.model", test::sentencepiece_bytes(model, true));
    return 0;
}
