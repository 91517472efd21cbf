#include "tokenizer/unicode.h"

#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>

#include <array>

#include "core/error.h"

namespace vkllm::tokenizer {

CharClass char_class(char32_t cpt) {
    switch (u_charType(UChar32(cpt))) {
        case U_UPPERCASE_LETTER: case U_LOWERCASE_LETTER: case U_TITLECASE_LETTER:
        case U_MODIFIER_LETTER: case U_OTHER_LETTER:
            return CharClass::Letter;
        case U_NON_SPACING_MARK: case U_ENCLOSING_MARK: case U_COMBINING_SPACING_MARK:
            return CharClass::Mark;
        case U_DECIMAL_DIGIT_NUMBER: case U_LETTER_NUMBER: case U_OTHER_NUMBER:
            return CharClass::Number;
        case U_SPACE_SEPARATOR: case U_LINE_SEPARATOR: case U_PARAGRAPH_SEPARATOR:
            return CharClass::Separator;
        case U_CONTROL_CHAR: case U_FORMAT_CHAR: case U_PRIVATE_USE_CHAR: case U_SURROGATE:
            return CharClass::Control;
        case U_DASH_PUNCTUATION: case U_START_PUNCTUATION: case U_END_PUNCTUATION:
        case U_CONNECTOR_PUNCTUATION: case U_OTHER_PUNCTUATION: case U_INITIAL_PUNCTUATION:
        case U_FINAL_PUNCTUATION:
            return CharClass::Punctuation;
        case U_MATH_SYMBOL: case U_CURRENCY_SYMBOL: case U_MODIFIER_SYMBOL: case U_OTHER_SYMBOL:
            return CharClass::Symbol;
        default:
            return CharClass::Undefined;
    }
}

bool is_whitespace(char32_t cpt) { return u_isUWhiteSpace(UChar32(cpt)); }

char32_t to_lower(char32_t cpt) { return char32_t(u_tolower(UChar32(cpt))); }

std::vector<char32_t> nfd(std::span<const char32_t> cpts) {
    UErrorCode status = U_ZERO_ERROR;
    const icu::Normalizer2* normalizer = icu::Normalizer2::getNFDInstance(status);
    if (U_FAILURE(status)) fail("ICU: the NFD normalizer is unavailable ({})", u_errorName(status));
    icu::UnicodeString source = icu::UnicodeString::fromUTF32(
        reinterpret_cast<const UChar32*>(cpts.data()), int32_t(cpts.size()));
    icu::UnicodeString normalized = normalizer->normalize(source, status);
    if (U_FAILURE(status)) fail("ICU: NFD normalization failed ({})", u_errorName(status));
    std::vector<char32_t> out(size_t(normalized.countChar32()));
    normalized.toUTF32(reinterpret_cast<UChar32*>(out.data()), int32_t(out.size()), status);
    return out;
}

size_t utf8_length(uint8_t lead) {
    static constexpr std::array<uint8_t, 16> by_high_nibble = {1, 1, 1, 1, 1, 1, 1, 1,
                                                               1, 1, 1, 1, 2, 2, 3, 4};
    return by_high_nibble[lead >> 4];
}

namespace {

bool is_continuation(std::string_view text, size_t at) {
    return at < text.size() && (uint8_t(text[at]) & 0xC0) == 0x80;
}

// Decodes one sequence at `offset` like llama.cpp's `unicode_cpt_from_utf8`: the lead byte and
// continuation bytes are checked, overlong forms are not. Returns 0 bytes when malformed.
std::pair<char32_t, size_t> decode_one(std::string_view text, size_t offset) {
    const uint8_t lead = uint8_t(text[offset]);
    if (lead < 0x80) return {lead, 1};
    size_t length = 0;
    char32_t cpt = 0;
    if ((lead & 0xE0) == 0xC0) length = 2, cpt = lead & 0x1F;
    else if ((lead & 0xF0) == 0xE0) length = 3, cpt = lead & 0x0F;
    else if ((lead & 0xF8) == 0xF0) length = 4, cpt = lead & 0x07;
    else return {0, 0};
    for (size_t i = 1; i < length; ++i) {
        if (!is_continuation(text, offset + i)) return {0, 0};
        cpt = (cpt << 6) | (uint8_t(text[offset + i]) & 0x3F);
    }
    return {cpt, length};
}

}  // namespace

std::vector<char32_t> decode_utf8(std::string_view text) {
    std::vector<char32_t> out;
    out.reserve(text.size());
    for (size_t offset = 0; offset < text.size();) {
        auto [cpt, length] = decode_one(text, offset);
        if (length == 0) {
            out.push_back(0xFFFD);
            offset += 1;
        } else {
            out.push_back(cpt);
            offset += length;
        }
    }
    return out;
}

void append_utf8(std::string& out, char32_t cpt) {
    if (cpt < 0x80) {
        out += char(cpt);
    } else if (cpt < 0x800) {
        out += char(0xC0 | (cpt >> 6));
        out += char(0x80 | (cpt & 0x3F));
    } else if (cpt < 0x10000) {
        out += char(0xE0 | (cpt >> 12));
        out += char(0x80 | ((cpt >> 6) & 0x3F));
        out += char(0x80 | (cpt & 0x3F));
    } else {
        out += char(0xF0 | ((cpt >> 18) & 0x07));
        out += char(0x80 | ((cpt >> 12) & 0x3F));
        out += char(0x80 | ((cpt >> 6) & 0x3F));
        out += char(0x80 | (cpt & 0x3F));
    }
}

namespace {

// The UTF-8 sequence that starts `bytes` (not empty), as table 3-7 of the Unicode standard bounds
// each byte: its length if well-formed; else the length of its maximal ill-formed subpart (at least
// 1), and whether that subpart is an incomplete sequence cut by the end of `bytes`.
struct Utf8Sequence {
    size_t length;
    bool well_formed, truncated;
};

Utf8Sequence next_utf8_sequence(std::string_view bytes) {
    const uint8_t lead = uint8_t(bytes[0]);
    if (lead < 0x80) return {1, true, false};
    size_t need = 0;
    if (lead >= 0xC2 && lead <= 0xDF) need = 2;
    else if (lead >= 0xE0 && lead <= 0xEF) need = 3;
    else if (lead >= 0xF0 && lead <= 0xF4) need = 4;
    else return {1, false, false};  // 80..C1 and F5..FF begin nothing
    // The second byte's range leaves out overlong forms (E0, F0), surrogates (ED) and codepoints past
    // U+10FFFF (F4); later bytes are 80..BF.
    const uint8_t low = lead == 0xE0 ? 0xA0 : lead == 0xF0 ? 0x90 : 0x80;
    const uint8_t high = lead == 0xED ? 0x9F : lead == 0xF4 ? 0x8F : 0xBF;
    for (size_t i = 1; i < need; ++i) {
        if (i == bytes.size()) return {i, false, true};
        const uint8_t byte = uint8_t(bytes[i]);
        if (byte < (i == 1 ? low : 0x80) || byte > (i == 1 ? high : 0xBF)) return {i, false, false};
    }
    return {need, true, false};
}

}  // namespace

std::string valid_utf8(std::string_view bytes) {
    std::string out;
    out.reserve(bytes.size());
    while (!bytes.empty()) {
        const Utf8Sequence sequence = next_utf8_sequence(bytes);
        if (sequence.well_formed) out += bytes.substr(0, sequence.length);
        else out += "\xEF\xBF\xBD";  // U+FFFD
        bytes.remove_prefix(sequence.length);
    }
    return out;
}

size_t complete_utf8_prefix(std::string_view bytes) {
    for (size_t at = 0; at < bytes.size();) {
        const Utf8Sequence sequence = next_utf8_sequence(bytes.substr(at));
        if (sequence.truncated) return at;
        at += sequence.length;
    }
    return bytes.size();
}

namespace {

struct ByteAlphabet {
    std::array<std::string, 256> encoded;
    std::array<int16_t, 512> decoded;  // codepoint -> byte, -1 when not in the alphabet

    ByteAlphabet() {
        decoded.fill(-1);
        char32_t next_extra = 256;
        for (int byte = 0; byte < 256; ++byte) {
            const bool printable = (byte >= 0x21 && byte <= 0x7E) || (byte >= 0xA1 && byte <= 0xAC) ||
                                   (byte >= 0xAE && byte <= 0xFF);
            const char32_t cpt = printable ? char32_t(byte) : next_extra++;
            append_utf8(encoded[byte], cpt);
            decoded[cpt] = int16_t(byte);
        }
    }
};

const ByteAlphabet& byte_alphabet() {
    static const ByteAlphabet alphabet;
    return alphabet;
}

}  // namespace

std::string_view byte_to_unicode(uint8_t byte) { return byte_alphabet().encoded[byte]; }

std::optional<uint8_t> unicode_to_byte(char32_t cpt) {
    if (cpt >= 512 || byte_alphabet().decoded[cpt] < 0) return std::nullopt;
    return uint8_t(byte_alphabet().decoded[cpt]);
}

std::string replace_all(std::string_view text, std::string_view from, std::string_view to) {
    std::string out;
    out.reserve(text.size());
    for (size_t at = 0;;) {
        const size_t next = text.find(from, at);
        out += text.substr(at, next - at);
        if (next == std::string_view::npos) return out;
        out += to;
        at = next + from.size();
    }
}

}  // namespace vkllm::tokenizer
