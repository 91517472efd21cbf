#pragma once
// Environment switches (VKLLM_*), read in one place so every knob is documented here.
#include <cstdint>
#include <optional>
#include <string>

namespace vkllm::env {

std::optional<std::string> get(const char* name);
bool flag(const char* name);                        // set to anything but "" or "0"
std::optional<uint64_t> bytes(const char* name);    // a byte count: 123, 64K, 128M, 2G

}  // namespace vkllm::env
