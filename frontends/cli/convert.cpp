// vkllm convert HF_DIR -o OUT.gguf [--type T] [--mmproj OUT-mmproj.gguf]: a Hugging Face checkpoint
// to GGUF. vkllm quantize IN.gguf OUT.gguf TYPE: a GGUF re-encoded in another type.
#include <cstdio>
#include <string>

#include "commands.h"
#include "convert/convert.h"
#include "convert/quantize.h"
#include "core/error.h"
#include "options.h"
#include "progress.h"

namespace vkllm::cli {

namespace {

constexpr std::string_view types = "f32|f16|bf16|q8_0|q4_0|q4_k|q6_k";

convert::OutputType parse_type(std::string_view text) {
    auto type = convert::parse_output_type(text);
    if (!type) fail("unknown type '{}' (f32, f16, bf16, q8_0, q4_0, q4_k and q6_k are)", text);
    return *type;
}

// Progress as a bar on a terminal, a line every few seconds otherwise; the report outlives the call.
convert::Progress report_progress(ProgressReport& report) {
    return [&report](uint64_t done, uint64_t total, std::string_view tensor) { report.update(done, total, tensor); };
}

}  // namespace

int convert(Args args) {
    convert::ConvertOptions options;
    std::string hf_dir, output, mmproj, type = "f16";
    Options parser("convert", "HF_DIR -o OUT.gguf [--type TYPE] [--mmproj OUT-mmproj.gguf]",
                   "A Hugging Face safetensors checkpoint to GGUF, as llama.cpp's converter writes it. Norms and other "
                   "vectors stay f32; q4_k is llama.cpp's Q4_K_M mix.");
    parser.positional(hf_dir, "HF_DIR", "the folder of config.json, *.safetensors and the tokenizer", true)
        .add("-o,--output", output, "OUT.gguf", "the model to write")
        .add("--type", type, types, "the matrices' type")
        .add("--mmproj", mmproj, "OUT-mmproj.gguf", "also write the vision encoder (-o may then be left out)");
    if (!parser.parse(args)) return 0;
    if (output.empty() && mmproj.empty()) fail("give -o OUT.gguf, --mmproj OUT-mmproj.gguf or both");
    options.hf_dir = hf_dir;
    options.output = output;
    options.mmproj = mmproj;
    options.type = parse_type(type);
    {
        ProgressReport report("converting");
        options.progress = report_progress(report);
        convert::convert(options);
    }
    for (const auto& path : {options.output, options.mmproj})
        if (!path.empty()) std::printf("%s\n", path.c_str());
    return 0;
}

int quantize(Args args) {
    std::string input, output, type;
    Options parser("quantize", "IN.gguf OUT.gguf TYPE", "A GGUF re-encoded in another type.");
    parser.positional(input, "IN.gguf", "the model to read", true)
        .positional(output, "OUT.gguf", "the model to write", true)
        .positional(type, "TYPE", fmt::format("the matrices' type: {}", types), true);
    if (!parser.parse(args)) return 0;
    const convert::OutputType output_type = parse_type(type);
    {
        ProgressReport report("quantizing");
        convert::quantize_file(input, output, output_type, report_progress(report));
    }
    std::printf("%s\n", output.c_str());
    return 0;
}

}  // namespace vkllm::cli
