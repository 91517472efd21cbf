// libFuzzer entry for the GGUF reader (built with -DVKLLM_FUZZ=ON and clang; run by scripts/fuzz).
// Any input must either parse or throw vkllm::Error; a crash, a sanitizer report, a hang or any
// other exception is a bug. Accepted files also go through what `vkllm info` and loaders do.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "gguf/dump.h"
#include "gguf/quants.h"
#include "gguf/reader.h"

namespace {

// Reads every key through the typed getters, as model loaders and tokenizers will.
void read_all_metadata(const vkllm::gguf::File& file) {
    for (const vkllm::gguf::KeyValue& kv : file.metadata()) {
        const auto attempt = [](const auto& get) {
            try {
                (void)get();
            } catch (const vkllm::Error&) {
            }
        };
        attempt([&] { return file.get_i64(kv.key); });
        attempt([&] { return file.get_u32(kv.key); });
        attempt([&] { return file.get_f32(kv.key); });
        attempt([&] { return file.get_string(kv.key); });
        attempt([&] { return file.get_string_array(kv.key); });
        attempt([&] { return file.get_f32_array(kv.key); });
        attempt([&] { return file.get_i32_array(kv.key); });
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::vector<std::byte> bytes(size);
    if (size > 0) std::memcpy(bytes.data(), data, size);
    try {
        const vkllm::gguf::File file = vkllm::gguf::File::from_bytes(std::move(bytes), "fuzz.gguf");
        read_all_metadata(file);
        (void)vkllm::gguf::dump(file);
        for (const vkllm::gguf::Tensor& tensor : file.tensors())
            if (vkllm::gguf::has_reference(tensor.type)) (void)vkllm::gguf::dequantize(tensor);
    } catch (const vkllm::Error&) {
    }
    return 0;
}
