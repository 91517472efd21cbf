// gguf_fuzz_seeds OUT_DIR [MODEL.gguf...]: seed inputs for the reader's fuzzer. Writes the
// writer-made sample (every value type) and, for each model given, a miniature with the same keys,
// arrays cut to 16 items, and each tensor cut to its first row: real layouts, a few KiB each.
#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "core/error.h"
#include "gguf/reader.h"
#include "gguf/writer.h"
#include "samples.h"

using namespace vkllm::gguf;

namespace {

constexpr uint64_t max_items = 16;

Value shortened(Value v) {
    if (v.type != ValueType::Array || v.count <= max_items) return v;
    if (!v.scalars.empty()) v.scalars = v.scalars.first(v.scalars.size() / v.count * max_items);
    if (!v.strings.empty()) v.strings.resize(max_items);
    if (!v.arrays.empty()) v.arrays.resize(max_items);
    v.count = max_items;
    return v;
}

std::vector<std::byte> miniature(const File& model) {
    Writer w(model.version());
    for (const KeyValue& kv : model.metadata()) w.add_value(kv.key, shortened(kv.value));
    for (const Tensor& t : model.tensors()) {
        const uint64_t row[] = {t.ne[0]};
        w.add_tensor(t.name, t.type, row, t.data.first(t.row_bytes()));
    }
    return w.bytes();
}

void save(const std::filesystem::path& path, const std::vector<std::byte>& bytes) {
    std::FILE* out = std::fopen(path.string().c_str(), "wb");
    if (!out || std::fwrite(bytes.data(), 1, bytes.size(), out) != bytes.size()) vkllm::fail("{}: cannot write", path.string());
    std::fclose(out);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: gguf_fuzz_seeds OUT_DIR [MODEL.gguf...]\n");
        return 1;
    }
    try {
        const std::filesystem::path out = argv[1];
        std::filesystem::create_directories(out);
        save(out / "sample.gguf", test::sample_file());
        for (int i = 2; i < argc; ++i) {
            const std::filesystem::path model = argv[i];
            const std::string name = model.parent_path().filename().string() + "-" + model.filename().string();
            save(out / name, miniature(File::open(model)));
        }
    } catch (const vkllm::Error& error) {
        std::fprintf(stderr, "gguf_fuzz_seeds: %s\n", error.what());
        return 1;
    }
    return 0;
}
