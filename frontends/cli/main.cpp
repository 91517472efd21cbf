// vkllm: the command-line front end. Errors from the runtime are one sentence: print it, exit 1.
#include <cstdio>
#include <exception>
#include <string_view>
#include <vector>

#include "commands.h"
#include "core/error.h"

namespace {

struct Command {
    std::string_view name;
    int (*run)(vkllm::cli::Args);
    std::string_view summary;
};

constexpr Command commands[] = {
    {"run", vkllm::cli::run, "generate text from a prompt"},
    {"chat", vkllm::cli::chat, "talk with the model through its chat template, keeping the KV cache across turns"},
    {"eval", vkllm::cli::eval, "teacher-forced logits of every position, written as float32"},
    {"perplexity", vkllm::cli::perplexity, "perplexity of a text, as llama.cpp computes it"},
    {"bench", vkllm::cli::bench, "prompt and generation speed, with GPU time per op, dispatches and GB/s"},
    {"bench-ops", vkllm::cli::bench_ops, "GB/s of each matvec kernel next to the device's streaming ceiling"},
    {"devices", vkllm::cli::devices, "list Vulkan devices, their capabilities, and which one is chosen"},
    {"shaders", vkllm::cli::shaders, "a model's pipelines on a device with the compiler's register statistics"},
    {"synth", vkllm::cli::synth, "write a GGUF of a real model's shape with seeded random weights"},
    {"info", vkllm::cli::info, "show a GGUF file's metadata and tensors"},
    {"convert", vkllm::cli::convert, "convert a Hugging Face safetensors checkpoint to GGUF"},
    {"quantize", vkllm::cli::quantize, "re-encode a GGUF in another type (q8_0, q4_0, q4_k...)"},
    {"tokenize", vkllm::cli::tokenize, "token ids of a text (or a file's bytes) with a model's tokenizer"},
    {"detokenize", vkllm::cli::detokenize, "the text of token ids"},
    {"template", vkllm::cli::chat_template, "the prompt a model's chat template makes of a conversation"},
};

void print_usage() {
    std::printf("usage: vkllm COMMAND [options]\n\ncommands:\n");
    for (const Command& command : commands)
        std::printf("  %-12.*s %.*s\n", int(command.name.size()), command.name.data(),
                    int(command.summary.size()), command.summary.data());
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2 || std::string_view(argv[1]) == "--help" || std::string_view(argv[1]) == "-h") {
        print_usage();
        return argc < 2 ? 1 : 0;
    }
    std::vector<std::string_view> args(argv + 2, argv + argc);
    for (const Command& command : commands) {
        if (command.name != argv[1]) continue;
        try {
            return command.run(args);
        } catch (const vkllm::Error& error) {
            std::fprintf(stderr, "vkllm %s: %s\n", argv[1], error.what());
        } catch (const std::exception& error) {
            std::fprintf(stderr, "vkllm %s: internal error: %s\n", argv[1], error.what());
        }
        return 1;
    }
    std::fprintf(stderr, "vkllm: unknown command '%s'\n", argv[1]);
    print_usage();
    return 1;
}
