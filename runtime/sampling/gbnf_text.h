#pragma once
// Writing GBNF text: literals and character classes that parse back to exactly the given code points.
#include <fmt/format.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sampling/utf8.h"

namespace vkllm::sampling {

// One code point as GBNF writes it inside "..." (in_class false) or [...]: printable ASCII as it is
// unless it means something there, control characters as \xHH, other code points as UTF-8.
inline std::string gbnf_char(uint32_t c, bool in_class) {
    const std::string_view special = in_class ? "\\]-[^\"" : "\\\"";
    if (c >= 0x20 && c < 0x7F && special.find(char(c)) == std::string_view::npos) return std::string(1, char(c));
    if (c < 0x80) return fmt::format("\\x{:02X}", c);
    if (!is_valid_code_point(c)) return fmt::format("\\U{:08X}", c);
    std::string out;
    append_utf8(out, c);
    return out;
}

// "text" for valid UTF-8 text.
inline std::string gbnf_literal(std::string_view text) {
    std::string out = "\"";
    while (!text.empty()) {
        const Utf8Char c = decode_utf8(text);
        const size_t length = c.length ? c.length : 1;
        out += c.length ? gbnf_char(c.code_point, false) : fmt::format("\\x{:02X}", uint8_t(text[0]));
        text.remove_prefix(length);
    }
    return out + "\"";
}

// [ranges] of inclusive code point ranges (at least one).
inline std::string gbnf_class(const std::vector<std::pair<uint32_t, uint32_t>>& ranges, bool negated = false) {
    std::string out = negated ? "[^" : "[";
    for (const auto& [first, last] : ranges) {
        out += gbnf_char(first, true);
        if (last == first) continue;
        out += '-';
        out += gbnf_char(last, true);
    }
    return out + "]";
}

}  // namespace vkllm::sampling
