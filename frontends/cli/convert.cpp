// vkllm convert HF_DIR -o OUT.gguf [--type T] [--mmproj OUT-mmproj.gguf]: a Hugging Face checkpoint
// to GGUF. vkllm quantize IN.gguf OUT.gguf TYPE: a GGUF re-encoded in another type.
#include <chrono>
#include <cstdio>
#include <string>

#include "commands.h"
#include "convert/convert.h"
#include "convert/quantize.h"
#include "core/error.h"

namespace vkllm::cli {

namespace {

constexpr std::string_view convert_usage =
    "usage: vkllm convert HF_DIR -o OUT.gguf [--type f32|f16|bf16|q8_0|q4_0|q4_k|q6_k] [--mmproj OUT-mmproj.gguf]\n"
    "  HF_DIR holds config.json, *.safetensors and the tokenizer (tekken.json). --type defaults to f16;\n"
    "  norms and other vectors stay f32, q4_k is llama.cpp's Q4_K_M mix. --mmproj also writes the vision\n"
    "  encoder (and -o may then be left out).\n";

constexpr std::string_view quantize_usage =
    "usage: vkllm quantize IN.gguf OUT.gguf f32|f16|bf16|q8_0|q4_0|q4_k|q6_k\n";

convert::OutputType parse_type(std::string_view text) {
    auto type = convert::parse_output_type(text);
    if (!type) fail("unknown type '{}' (f32, f16, bf16, q8_0, q4_0, q4_k and q6_k are)", text);
    return *type;
}

// Progress on stderr, the elapsed time first.
convert::Progress stderr_progress() {
    const auto start = std::chrono::steady_clock::now();
    return [start](std::string_view line) {
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        std::fprintf(stderr, "%7.2f s %.*s\n", seconds, int(line.size()), line.data());
    };
}

}  // namespace

int convert(Args args) {
    convert::ConvertOptions options;
    options.progress = stderr_progress();
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string_view arg = args[i];
        const auto value = [&]() {
            if (i + 1 >= args.size()) fail("{} needs a value; {}", arg, convert_usage);
            return args[++i];
        };
        if (arg == "--help" || arg == "-h") {
            std::fwrite(convert_usage.data(), 1, convert_usage.size(), stdout);
            return 0;
        }
        if (arg == "-o" || arg == "--output") options.output = value();
        else if (arg == "--type") options.type = parse_type(value());
        else if (arg == "--mmproj") options.mmproj = value();
        else if (options.hf_dir.empty() && !arg.starts_with("-")) options.hf_dir = arg;
        else fail("unexpected argument '{}'; {}", arg, convert_usage);
    }
    if (options.hf_dir.empty() || (options.output.empty() && options.mmproj.empty())) fail("{}", convert_usage);
    convert::convert(options);
    for (const auto& path : {options.output, options.mmproj})
        if (!path.empty()) std::printf("%s\n", path.c_str());
    return 0;
}

int quantize(Args args) {
    if (args.size() == 1 && (args[0] == "--help" || args[0] == "-h")) {
        std::fwrite(quantize_usage.data(), 1, quantize_usage.size(), stdout);
        return 0;
    }
    if (args.size() != 3) fail("{}", quantize_usage);
    convert::quantize_file(std::string(args[0]), std::string(args[1]), parse_type(args[2]), stderr_progress());
    std::printf("%.*s\n", int(args[1].size()), args[1].data());
    return 0;
}

}  // namespace vkllm::cli
