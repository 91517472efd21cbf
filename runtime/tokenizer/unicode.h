#pragma once
// Codepoint-level helpers the tokenizers share: lenient UTF-8 decoding the way llama.cpp's
// unicode.cpp does it, character classes from ICU grouped like llama.cpp's `unicode_cpt_flags`,
// NFD and lowercase for WordPiece, and GPT-2's byte <-> printable-codepoint alphabet.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace vkllm::tokenizer {

// General category, folded to the groups llama.cpp's regex categories use (\p{N}, \p{L}, ...).
enum class CharClass : uint8_t { Undefined, Number, Letter, Separator, Mark, Punctuation, Symbol, Control };

CharClass char_class(char32_t cpt);
bool is_whitespace(char32_t cpt);  // the Unicode White_Space property (25 codepoints)
char32_t to_lower(char32_t cpt);   // simple (one-to-one) lowercase mapping
std::vector<char32_t> nfd(std::span<const char32_t> cpts);

// Byte length announced by a UTF-8 lead byte (1 for continuation bytes), as llama.cpp's
// `unicode_len_utf8` counts it when it walks a string one character at a time.
size_t utf8_length(uint8_t lead);

// Every byte that does not start a well-formed sequence becomes one U+FFFD.
std::vector<char32_t> decode_utf8(std::string_view text);
void append_utf8(std::string& out, char32_t cpt);

// Well-formed UTF-8 (Unicode's table 3-7: no overlong forms, surrogates or codepoints past
// U+10FFFF): each maximal ill-formed subpart of `bytes` becomes one U+FFFD, Unicode's recommended
// substitution, which nlohmann's JSON dump with error_handler_t::replace (llama-server's output)
// makes too. An incomplete sequence at the end is one such subpart.
std::string valid_utf8(std::string_view bytes);

// Length of the longest prefix of `bytes` that does not end with an incomplete UTF-8 sequence the
// next bytes could still complete: what a streaming decoder may show now (through valid_utf8),
// keeping the rest until the next token. valid_utf8 of the prefix, then of the rest once more bytes
// follow, is valid_utf8 of the whole.
size_t complete_utf8_prefix(std::string_view bytes);

// GPT-2 byte-level alphabet: bytes 0x21-0x7E, 0xA1-0xAC and 0xAE-0xFF stand for themselves,
// the other 68 bytes map to U+0100.. in increasing byte order.
std::string_view byte_to_unicode(uint8_t byte);  // UTF-8 of the mapped codepoint
std::optional<uint8_t> unicode_to_byte(char32_t cpt);

// Every occurrence of `from` (not empty) replaced by `to`: SPM's visible space U+2581 <-> ' '.
std::string replace_all(std::string_view text, std::string_view from, std::string_view to);

}  // namespace vkllm::tokenizer
