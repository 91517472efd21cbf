#include "core/file.h"

#include <fstream>
#include <iterator>
#include <span>

#include "core/error.h"

namespace vkllm {

std::vector<std::byte> read_file(const std::filesystem::path& path, std::string_view what) {
    std::ifstream in(path, std::ios::binary);
    if (!in) fail("{}: cannot open the {}", path.string(), what);
    const std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad()) fail("{}: reading the {} failed", path.string(), what);
    const auto bytes = std::as_bytes(std::span(chars));
    return {bytes.begin(), bytes.end()};
}

}  // namespace vkllm
