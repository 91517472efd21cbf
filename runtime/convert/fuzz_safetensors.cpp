// libFuzzer entry for the safetensors reader (built with -DVKLLM_FUZZ=ON and clang; run by
// scripts/fuzz). Any input must either parse or throw vkllm::Error; accepted files have every
// tensor decoded, as the converter reads them.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "convert/plan.h"
#include "convert/safetensors.h"
#include "core/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::vector<std::byte> bytes(size);
    if (size > 0) std::memcpy(bytes.data(), data, size);
    try {
        const auto file = vkllm::convert::SafetensorsFile::from_bytes(std::move(bytes), "fuzz.safetensors");
        std::vector<float> values;
        for (const vkllm::convert::SafeTensor& t : file.tensors()) {
            values.resize(t.n_elements());
            vkllm::convert::decode(t, 0, values);
        }
    } catch (const vkllm::Error&) {
    }
    return 0;
}
