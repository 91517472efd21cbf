// gguf_drop_key: copies a GGUF file without the named metadata keys, everything else as it was (key
// order, value types, tensors and their data). Makes variants of a model whose reference logits come
// from another program, e.g. tests/data/mistral3_no_yarn_log_mul.
// Usage: gguf_drop_key IN.gguf OUT.gguf KEY [KEY...]
#include <algorithm>
#include <cstdio>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "gguf/writer.h"

using namespace vkllm;

namespace {

void drop_keys(const std::filesystem::path& in, const std::filesystem::path& out, std::span<const std::string_view> keys) {
    gguf::File file = gguf::File::open(in);
    // A split model's parts each carry split.* keys and their own tensors; one copy cannot keep that.
    if (file.n_parts() != 1) fail("{}: a split model cannot be copied as one file", file.name());
    for (std::string_view key : keys)
        if (!file.find(key)) fail("{}: no key '{}' to drop", file.name(), key);

    gguf::Writer writer(file.version());
    for (const gguf::KeyValue& kv : file.metadata())
        if (std::find(keys.begin(), keys.end(), kv.key) == keys.end()) writer.add_value(kv.key, kv.value);
    for (const gguf::Tensor& tensor : file.tensors())
        writer.add_tensor(tensor.name, tensor.type, std::span(tensor.ne).first(tensor.n_dims), tensor.data);
    writer.write(out);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 4) {
        std::fprintf(stderr, "usage: gguf_drop_key IN.gguf OUT.gguf KEY [KEY...]\n");
        return 2;
    }
    try {
        std::vector<std::string_view> keys(argv + 3, argv + argc);
        drop_keys(argv[1], argv[2], keys);
        return 0;
    } catch (const std::exception& error) {
        std::fprintf(stderr, "gguf_drop_key: %s\n", error.what());
        return 1;
    }
}
