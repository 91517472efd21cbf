// vkllm info MODEL.gguf [--full]: what a GGUF file holds (metadata, tensor table, totals).
#include <cstdio>
#include <limits>
#include <string>

#include "commands.h"
#include "core/error.h"
#include "gguf/dump.h"
#include "gguf/reader.h"

namespace vkllm::cli {

int info(Args args) {
    std::string_view path;
    gguf::DumpOptions options;
    for (std::string_view arg : args) {
        if (arg == "--full") {
            options.array_items = std::numeric_limits<size_t>::max();
            options.string_chars = std::numeric_limits<size_t>::max();
        } else if (path.empty() && !arg.starts_with("-")) {
            path = arg;
        } else {
            fail("unexpected argument '{}'; usage: vkllm info MODEL.gguf [--full]", arg);
        }
    }
    if (path.empty()) fail("usage: vkllm info MODEL.gguf [--full] (a split model: name its first part)");
    const gguf::File file = gguf::File::open(std::string(path));
    const std::string text = gguf::dump(file, options);
    std::fwrite(text.data(), 1, text.size(), stdout);
    return 0;
}

}  // namespace vkllm::cli
