#include "core/file.h"

#include <fstream>
#include <iterator>
#include <span>

#include "core/error.h"

namespace vkllm {

std::string read_text_file(const std::filesystem::path& path, std::string_view what) {
    std::error_code error;
    if (std::filesystem::is_directory(path, error)) fail("{} is a directory, not the {}", path.string(), what);
    std::ifstream in(path, std::ios::binary);
    if (!in) fail("{}: cannot open the {}", path.string(), what);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad()) fail("{}: reading the {} failed", path.string(), what);
    return text;
}

std::vector<std::byte> read_file(const std::filesystem::path& path, std::string_view what) {
    const std::string text = read_text_file(path, what);
    const auto bytes = std::as_bytes(std::span(text));
    return {bytes.begin(), bytes.end()};
}

}  // namespace vkllm
