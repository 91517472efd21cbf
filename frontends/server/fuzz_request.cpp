// libFuzzer entry for the server's request parser (built with -DVKLLM_FUZZ=ON and clang; run by
// scripts/fuzz). Any body must either parse or throw ApiError, the server's 4xx: a crash, a sanitizer
// report, a hang or any other exception is a bug. Both endpoints read every input.
#include <cstddef>
#include <cstdint>
#include <string>

#include "openai.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string body(reinterpret_cast<const char*>(data), size);
    for (auto endpoint : {vkllm::server::Endpoint::ChatCompletions, vkllm::server::Endpoint::Completions}) {
        try {
            (void)vkllm::server::parse_request(endpoint, body);
        } catch (const vkllm::server::ApiError&) {
        }
    }
    return 0;
}
