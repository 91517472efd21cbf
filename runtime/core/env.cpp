#include "core/env.h"

#include <cstdlib>

#include "core/error.h"

namespace vkllm::env {

std::optional<std::string> get(const char* name) {
    const char* value = std::getenv(name);
    if (!value) return std::nullopt;
    return std::string(value);
}

bool flag(const char* name) {
    auto value = get(name);
    return value && !value->empty() && *value != "0";
}

std::optional<uint64_t> bytes(const char* name) {
    auto value = get(name);
    if (!value || value->empty()) return std::nullopt;
    char* end = nullptr;
    unsigned long long count = std::strtoull(value->c_str(), &end, 10);
    uint64_t scale = 1;
    switch (*end) {
        case '\0': break;
        case 'K': case 'k': scale = 1ull << 10; ++end; break;
        case 'M': case 'm': scale = 1ull << 20; ++end; break;
        case 'G': case 'g': scale = 1ull << 30; ++end; break;
        default: end = nullptr;
    }
    if (end == value->c_str() || !end || *end != '\0' || count == 0)
        fail("{}={}: expected a positive byte count such as 4096, 64K, 128M or 2G", name, *value);
    return count * scale;
}

}  // namespace vkllm::env
