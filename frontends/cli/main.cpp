// vkllm: the command-line front end. Errors from the runtime are one sentence: print it, exit 1.
#include <cstdio>
#include <exception>
#include <string_view>
#include <vector>

#include <vulkan/vulkan_core.h>

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
    {"serve", vkllm::cli::serve, "serve OpenAI's API over HTTP, batching many requests at once"},
    {"eval", vkllm::cli::eval, "teacher-forced logits of every position, written as float32"},
    {"embed", vkllm::cli::embed, "the embedding of each line of a text (BERT or any model), pooled and normalized"},
    {"perplexity", vkllm::cli::perplexity, "perplexity of a text, as llama.cpp computes it"},
    {"bench", vkllm::cli::bench, "prompt and generation speed, with GPU time per op, dispatches and GB/s"},
    {"bench-ops", vkllm::cli::bench_ops, "GB/s of each matvec kernel next to the device's streaming ceiling"},
    {"devices", vkllm::cli::devices, "list Vulkan devices, their capabilities, and which one is chosen"},
    {"tune", vkllm::cli::tune, "time a model's launch shapes on this device and keep the fastest"},
    {"shaders", vkllm::cli::shaders, "a model's pipelines on a device with the compiler's register statistics"},
    {"synth", vkllm::cli::synth, "write a GGUF of a real model's shape with seeded random weights"},
    {"info", vkllm::cli::info, "show a GGUF file's metadata and tensors"},
    {"convert", vkllm::cli::convert, "convert a Hugging Face safetensors checkpoint to GGUF"},
    {"quantize", vkllm::cli::quantize, "re-encode a GGUF in another type (q8_0, q4_0, q4_k...)"},
    {"tokenize", vkllm::cli::tokenize, "token ids of a text (or a file's bytes) with a model's tokenizer"},
    {"detokenize", vkllm::cli::detokenize, "the text of token ids"},
    {"template", vkllm::cli::chat_template, "the prompt a model's chat template makes of a conversation"},
};

void print_usage(FILE* out) {
    std::fprintf(out, "usage: vkllm COMMAND [options]   (vkllm help COMMAND, or vkllm COMMAND --help: its options)\n\n"
                      "commands:\n");
    for (const Command& command : commands)
        std::fprintf(out, "  %-12.*s %.*s\n", int(command.name.size()), command.name.data(),
                     int(command.summary.size()), command.summary.data());
    std::fprintf(out, "\n  --version    the version, git commit, build type and Vulkan headers\n");
}

// The commit and build type come from CMake at configure time (frontends/cli/CMakeLists.txt).
void print_version() {
    const std::string_view build_type = VKLLM_BUILD_TYPE;
    std::printf("vkllm %s (commit %s, %s build, Vulkan headers %u.%u.%u)\n", VKLLM_VERSION, VKLLM_GIT_COMMIT,
                build_type.empty() ? "no CMAKE_BUILD_TYPE" : VKLLM_BUILD_TYPE, VK_API_VERSION_MAJOR(VK_HEADER_VERSION_COMPLETE),
                VK_API_VERSION_MINOR(VK_HEADER_VERSION_COMPLETE), VK_API_VERSION_PATCH(VK_HEADER_VERSION_COMPLETE));
}

const Command* find_command(std::string_view name) {
    for (const Command& command : commands)
        if (command.name == name) return &command;
    return nullptr;
}

int run_command(const Command& command, std::span<const std::string_view> args) {
    try {
        return command.run(args);
    } catch (const vkllm::Error& error) {
        std::fprintf(stderr, "vkllm %.*s: %s\n", int(command.name.size()), command.name.data(), error.what());
    } catch (const std::exception& error) {
        std::fprintf(stderr, "vkllm %.*s: internal error: %s\n", int(command.name.size()), command.name.data(),
                     error.what());
    }
    return 1;
}

}  // namespace

int main(int argc, char** argv) {
    const std::string_view first = argc < 2 ? "" : argv[1];
    if (argc < 2) {
        print_usage(stderr);
        return 1;
    }
    if (first == "--help" || first == "-h" || (first == "help" && argc == 2)) {
        print_usage(stdout);
        return 0;
    }
    if (first == "--version") {
        print_version();
        return 0;
    }
    if (first == "help") {  // vkllm help COMMAND: the command's own --help
        const Command* command = find_command(argv[2]);
        if (!command) {
            std::fprintf(stderr, "vkllm help: unknown command '%s'; vkllm help lists them\n", argv[2]);
            return 1;
        }
        constexpr std::string_view help[] = {"--help"};
        return run_command(*command, help);
    }
    const Command* command = find_command(first);
    if (!command) {
        std::fprintf(stderr, "vkllm: unknown command '%s'; vkllm help lists them\n", argv[1]);
        return 1;
    }
    const std::vector<std::string_view> args(argv + 2, argv + argc);
    return run_command(*command, args);
}
