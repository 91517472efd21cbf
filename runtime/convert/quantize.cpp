#include "convert/quantize.h"

#include "core/error.h"
#include "gguf/quants.h"
#include "gguf/reader.h"

namespace vkllm::convert {

namespace {

RowSource dequantized_rows(const gguf::File& file, const gguf::Tensor& t) {
    if (!gguf::has_reference(t.type))
        fail("{}: tensor '{}' is {}, which vkllm cannot decode to re-quantize", file.name(), t.name,
             gguf::type_name(t.type));
    return [&t](uint64_t first, std::span<float> out) {
        const uint64_t row_bytes = t.row_bytes();
        gguf::dequantize(t.type, t.data.subspan(first * row_bytes, out.size() / t.ne[0] * row_bytes), out);
    };
}

}  // namespace

void quantize_file(const std::filesystem::path& input, const std::filesystem::path& output, OutputType type,
                   const Progress& progress) {
    const gguf::File file = gguf::File::open(input);
    Plan plan;
    for (const gguf::KeyValue& kv : file.metadata())
        if (kv.key != "general.file_type") plan.metadata.add_value(kv.key, kv.value);
    if (!file.find("general.quantization_version")) plan.metadata.add_u32("general.quantization_version", 2);
    for (const gguf::Tensor& t : file.tensors()) {
        plan.tensors.push_back({std::string(t.name), {t.ne.begin(), t.ne.begin() + t.n_dims},
                                dequantized_rows(file, t), t.type, t.data});
    }
    write_plan(plan, output, type, progress);
}

}  // namespace vkllm::convert
