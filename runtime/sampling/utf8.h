#pragma once
// Strict UTF-8 for grammars: no overlong forms, no surrogates, nothing above U+10FFFF.
#include <cstdint>
#include <string>
#include <string_view>

namespace vkllm::sampling {

// The byte length a lead byte announces (1 for ASCII and for bytes that cannot lead).
inline size_t utf8_length(uint8_t lead) {
    return lead >= 0xF0 && lead <= 0xF4 ? 4 : lead >= 0xE0 && lead <= 0xEF ? 3 : lead >= 0xC2 && lead <= 0xDF ? 2 : 1;
}

// The smallest code point a sequence of `length` bytes may encode (smaller ones are overlong).
inline uint32_t utf8_min_code_point(size_t length) {
    return length == 4 ? 0x10000 : length == 3 ? 0x800 : length == 2 ? 0x80 : 0;
}

inline bool is_valid_code_point(uint32_t c) { return c <= 0x10FFFF && (c < 0xD800 || c > 0xDFFF); }

struct Utf8Char {
    uint32_t code_point = 0;
    size_t length = 0;  // bytes read; 0 when the text does not start with a valid character
};

inline Utf8Char decode_utf8(std::string_view text) {
    if (text.empty()) return {};
    const uint8_t lead = uint8_t(text[0]);
    if (lead < 0x80) return {lead, 1};
    const size_t length = utf8_length(lead);
    if (length == 1 || text.size() < length) return {};
    uint32_t value = lead & (0x7F >> length);
    for (size_t i = 1; i < length; ++i) {
        const uint8_t byte = uint8_t(text[i]);
        if ((byte & 0xC0) != 0x80) return {};
        value = value << 6 | (byte & 0x3F);
    }
    if (value < utf8_min_code_point(length) || !is_valid_code_point(value)) return {};
    return {value, length};
}

inline void append_utf8(std::string& out, uint32_t c) {
    if (c < 0x80) {
        out += char(c);
    } else if (c < 0x800) {
        out += char(0xC0 | c >> 6);
        out += char(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
        out += char(0xE0 | c >> 12);
        out += char(0x80 | (c >> 6 & 0x3F));
        out += char(0x80 | (c & 0x3F));
    } else {
        out += char(0xF0 | c >> 18);
        out += char(0x80 | (c >> 12 & 0x3F));
        out += char(0x80 | (c >> 6 & 0x3F));
        out += char(0x80 | (c & 0x3F));
    }
}

}  // namespace vkllm::sampling
