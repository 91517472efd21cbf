// libFuzzer entry for the tokenizer.model reader (built with -DVKLLM_FUZZ=ON and clang; run by
// scripts/fuzz). Any input must either parse or throw vkllm::Error.
#include <cstddef>
#include <cstdint>
#include <span>

#include "convert/sentencepiece.h"
#include "core/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        vkllm::convert::parse_sentencepiece(std::as_bytes(std::span(data, size)), "fuzz.model");
    } catch (const vkllm::Error&) {
    }
    return 0;
}
