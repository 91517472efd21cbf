// libFuzzer entry for the server's request parser (built with -DVKLLM_FUZZ=ON and clang; run by
// scripts/fuzz). Any body must either parse or throw ApiError, the server's 4xx: a crash, a sanitizer
// report, a hang or any other exception is a bug. Both endpoints read every input, with and without
// the limits a server passes (images allowed, a prompt bound). The seeds hold a body nested 30,000 deep.
#include <cstddef>
#include <cstdint>
#include <string>

#include "openai.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string body(reinterpret_cast<const char*>(data), size);
    const vkllm::server::ParseLimits served{.images = true, .max_prompt_bytes = 4096, .n_ctx = 512, .n_vocab = 32000};
    for (auto endpoint : {vkllm::server::Endpoint::ChatCompletions, vkllm::server::Endpoint::Completions}) {
        for (const vkllm::server::ParseLimits& limits : {vkllm::server::ParseLimits{}, served}) {
            try {
                (void)vkllm::server::parse_request(endpoint, body, limits);
            } catch (const vkllm::server::ApiError&) {
            }
        }
    }
    return 0;
}
