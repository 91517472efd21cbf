#pragma once
// Whole-file reads for the small inputs parsers take in one piece (images, tokenizer models).
#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace vkllm {

// The file's bytes; throws a vkllm::Error naming the path and `what` ("image file") when it
// cannot be opened or read.
std::vector<std::byte> read_file(const std::filesystem::path& path, std::string_view what);
// The same as text (JSON, templates).
std::string read_text_file(const std::filesystem::path& path, std::string_view what);

}  // namespace vkllm
