#include "tokenizer/pretokenize.h"

#define PCRE2_CODE_UNIT_WIDTH 32
#include <pcre2.h>

#include <array>
#include <utility>

#include "core/error.h"
#include "tokenizer/unicode.h"

namespace vkllm::tokenizer {

namespace {

// GPT-2's split with llama.cpp's word contractions (no trailing `|\s+`, as llama.cpp has it).
constexpr std::string_view gpt2_regex =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";
// llama3 with the case-insensitive contractions spelled out (llama.cpp PR 6920).
constexpr std::string_view llama3_regex =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view qwen2_regex =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// Tekken with upper/lower case approximated as "letter that is not a-z" / "not A-Z" (F.4).
constexpr std::string_view tekken_regex =
    R"([^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view gpt4o_regex =
    R"([^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view deepseek3_regex =
    R"([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// The cased-letter ranges of DeepSeek LLM's tokenizer.json, as escapes: some of these code
// points (U+1F7D, U+212A, ...) are ones that Unicode normalisation of a source file would change.
constexpr std::string_view deepseek_llm_letters =
    "\\s?[A-Za-z\\x{B5}\\x{C0}-\\x{D6}\\x{D8}-\\x{F6}\\x{F8}-\\x{1BA}\\x{1BC}-\\x{1BF}\\x{1C4}-"
    "\\x{293}\\x{295}-\\x{2AF}\\x{370}-\\x{373}\\x{376}\\x{377}\\x{37B}-\\x{37D}\\x{37F}\\x{386}"
    "\\x{388}-\\x{38A}\\x{38C}\\x{38E}-\\x{3A1}\\x{3A3}-\\x{3F5}\\x{3F7}-\\x{481}\\x{48A}-"
    "\\x{52F}\\x{531}-\\x{556}\\x{10A0}-\\x{10C5}\\x{13A0}-\\x{13F5}\\x{13F8}-\\x{13FD}\\x{1C90}-"
    "\\x{1CBA}\\x{1CBD}-\\x{1CBF}\\x{1D00}-\\x{1D2B}\\x{1D6B}-\\x{1D77}\\x{1D79}-\\x{1D9A}"
    "\\x{1E00}-\\x{1F15}\\x{1F18}-\\x{1F1D}\\x{1F20}-\\x{1F45}\\x{1F48}-\\x{1F4D}\\x{1F50}-"
    "\\x{1F57}\\x{1F59}\\x{1F5B}\\x{1F5D}\\x{1F5F}-\\x{1F7D}\\x{1F80}-\\x{1FB4}\\x{1FB6}-"
    "\\x{1FBC}\\x{1FBE}\\x{1FC2}-\\x{1FC4}\\x{1FC6}-\\x{1FCC}\\x{1FD0}-\\x{1FD3}\\x{1FD6}-"
    "\\x{1FDB}\\x{1FE0}-\\x{1FEC}\\x{1FF2}-\\x{1FF4}\\x{1FF6}-\\x{1FFC}\\x{2102}\\x{2107}"
    "\\x{210A}-\\x{2113}\\x{2115}\\x{2119}-\\x{211D}\\x{2124}\\x{2126}\\x{2128}\\x{212A}-"
    "\\x{212D}\\x{212F}-\\x{2134}\\x{2139}\\x{213C}-\\x{213F}\\x{2145}-\\x{2149}\\x{214E}"
    "\\x{2183}\\x{2184}\\x{2C00}-\\x{2C7B}\\x{2C7E}-\\x{2CE4}\\x{2CEB}-\\x{2CEE}\\x{2CF2}"
    "\\x{2CF3}\\x{A640}-\\x{A66D}\\x{A680}-\\x{A69B}\\x{A722}-\\x{A76F}\\x{A771}-\\x{A787}"
    "\\x{A78B}-\\x{A78E}\\x{AB70}-\\x{ABBF}\\x{FB00}-\\x{FB06}\\x{FB13}-\\x{FB17}\\x{FF21}-"
    "\\x{FF3A}\\x{FF41}-\\x{FF5A}\\x{10400}-\\x{1044F}\\x{104B0}-\\x{104D3}\\x{104D8}-\\x{104FB}"
    "\\x{10C80}-\\x{10CB2}\\x{10CC0}-\\x{10CF2}\\x{118A0}-\\x{118DF}\\x{1E900}-\\x{1E943}]+";

struct PreType {
    std::vector<std::string_view> names;
    std::vector<std::string_view> regexes;
};

const std::vector<PreType>& pre_types() {
    static const std::vector<PreType> table = {
        {{"default"},
         {R"([\p{P}\$\+<=>\^~\|]+)", gpt2_regex, R"(\p{N}+)", "[0-9][0-9][0-9]"}},
        {{"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2",
          "dbrx", "smaug-bpe", "chatglm-bpe", "glm4"},
         {llama3_regex}},
        {{"deepseek-llm"},
         {"[\r\n]", deepseek_llm_letters, "\\s?[!-/:-~\\x{FF01}-\\x{FF0F}\\x{FF1A}-\\x{FF5E}\\x{2018}-\\x{201F}\\x{3000}-\\x{3002}]+", R"(\s+$)",
          "[\\x{4E00}-\\x{9FA5}\\x{800}-\\x{4E00}\\x{AC00}-\\x{D7FF}]+", R"(\p{N}+)"}},
        {{"deepseek-coder"},
         {"[\r\n]", R"(\s?\p{L}+)", R"(\s?\p{P}+)", "[\\x{4E00}-\\x{9FA5}\\x{800}-\\x{4E00}\\x{AC00}-\\x{D7FF}]+", R"(\p{N})"}},
        {{"deepseek-v3", "hunyuan-dense", "joyai-llm"},
         {R"(\p{N}{1,3})", "[\\x{4E00}-\\x{9FA5}\\x{3040}-\\x{309F}\\x{30A0}-\\x{30FF}]+", deepseek3_regex}},
        {{"falcon"}, {R"([\p{P}\$\+<=>\^~\|`]+)", gpt2_regex, "[0-9][0-9][0-9]"}},
        {{"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b"},
         {R"(\p{N})", gpt2_regex}},
        {{"gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de", "mellum",
          "modern-bert", "mpt", "olmo", "jais", "trillion", "granite-docling", "exaone4",
          "jina-v1-en", "jina-v2-code", "roberta-bpe"},
         {gpt2_regex}},
        {{"qwen2", "deepseek-r1-qwen", "kormo", "stablelm2", "hunyuan", "megrez", "solar-open",
          "grok-2"},
         {qwen2_regex}},
        {{"poro-chat", "bloom", "gpt3-finnish"}, {R"( ?[^(\s|.,!?\x{2026}\x{3002}\x{FF0C}\x{3001}\x{964}\x{6D4}\x{60C})]+)"}},
        {{"viking"}, {R"( ?[^(\s|.,!?\x{2026}\x{3002}\x{FF0C}\x{3001}\x{964}\x{6D4}\x{60C})]+)", R"(\p{N})"}},
        {{"tekken"}, {tekken_regex}},
        {{"gpt-4o", "llama4", "minimax-m2"}, {gpt4o_regex}},
        {{"chameleon"},
         {"<sentinel:[0-9]+>", "(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z", R"(([\t\n]|    |  ))",
          R"(\p{N})", R"([\p{P}!-/:-@\[-`{-~])", gpt2_regex}},
    };
    return table;
}

// Collapsed marker unit of each category, and the ASCII members llama.cpp lists next to it.
struct Category {
    char name;
    char32_t marker;
    std::string_view members;  // PCRE class body: the marker, then the ASCII members
};
constexpr std::array<Category, 5> categories = {{
    {'N', 0xD1, R"(\x{D1}\x{30}-\x{39})"},
    {'L', 0xD2, R"(\x{D2}\x{41}-\x{5A}\x{61}-\x{7A})"},
    {'P', 0xD3,
     R"(\x{D3}\x{21}-\x{23}\x{25}-\x{2A}\x{2C}-\x{2F}\x{3A}-\x{3B}\x{3F}-\x{40}\x{5B}-\x{5D}\x{5F}\x{7B}\x{7D})"},
    {'M', 0xD4, R"(\x{D4})"},
    {'S', 0xD5, R"(\x{D5}\x{24}\x{2B}\x{3C}-\x{3E}\x{5E}\x{60}\x{7C})"},
}};
constexpr char32_t other_marker = 0xD0;
constexpr char32_t whitespace_marker = 0x0B;

const Category* category_at(std::string_view regex, size_t i) {
    if (i + 4 >= regex.size() || regex[i] != '\\' || regex[i + 1] != 'p' || regex[i + 2] != '{' ||
        regex[i + 4] != '}')
        return nullptr;
    for (const Category& category : categories)
        if (category.name == regex[i + 3]) return &category;
    return nullptr;
}

bool uses_categories(std::string_view regex) {
    for (size_t i = 0; i < regex.size(); ++i)
        if (category_at(regex, i)) return true;
    return false;
}

// Rewrites each \p{X} into a class over the collapsed units, inside an existing [...] or as one.
std::string collapse_regex(std::string_view regex) {
    std::string out;
    bool inside_class = false;
    for (size_t i = 0; i < regex.size(); ++i) {
        const char c = regex[i];
        if (uint8_t(c) >= 0x80)
            fail("pre-tokenizer regex '{}' mixes unicode categories with non-ASCII characters", regex);
        const bool escaped = i > 0 && regex[i - 1] == '\\';
        if (c == '[' && !escaped) inside_class = true;
        if (c == ']' && inside_class && !escaped) inside_class = false;
        if (const Category* category = category_at(regex, i)) {
            if (!inside_class) out += '[';
            out += category->members;
            if (!inside_class) out += ']';
            i += 4;
            continue;
        }
        out += c;
    }
    return out;
}

char32_t collapse(char32_t cpt) {
    if (cpt < 0x80) return cpt;
    if (is_whitespace(cpt)) return whitespace_marker;
    switch (char_class(cpt)) {
        case CharClass::Number: return categories[0].marker;
        case CharClass::Letter: return categories[1].marker;
        case CharClass::Punctuation: return categories[2].marker;
        case CharClass::Mark: return categories[3].marker;
        case CharClass::Symbol: return categories[4].marker;
        default: return other_marker;
    }
}

}  // namespace

struct PreTokenizer::Regex {
    pcre2_code* code = nullptr;
    bool collapsed = false;
    ~Regex() { pcre2_code_free(code); }
};

std::vector<std::string_view> PreTokenizer::regexes_for(std::string_view pre) {
    for (const PreType& type : pre_types())
        for (std::string_view name : type.names)
            if (name == pre) return type.regexes;
    return {};
}

PreTokenizer::PreTokenizer(std::string_view pre) {
    const std::vector<std::string_view> sources = regexes_for(pre);
    if (sources.empty()) fail("tokenizer.ggml.pre: unknown pre-tokenizer '{}'", pre);
    for (std::string_view source : sources) {
        auto regex = std::make_unique<Regex>();
        regex->collapsed = uses_categories(source);
        std::u32string pattern;
        if (regex->collapsed) {
            for (char c : collapse_regex(source)) pattern += char32_t(uint8_t(c));
        } else {
            for (char32_t cpt : decode_utf8(source)) pattern += cpt;
        }
        int error = 0;
        PCRE2_SIZE error_offset = 0;
        regex->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                    PCRE2_DOLLAR_ENDONLY, &error, &error_offset, nullptr);
        if (!regex->code) {
            std::array<PCRE2_UCHAR, 256> message{};
            pcre2_get_error_message(error, message.data(), message.size());
            std::string text;
            for (PCRE2_UCHAR unit : message) {
                if (!unit) break;
                append_utf8(text, char32_t(unit));
            }
            fail("pre-tokenizer '{}': regex does not compile at offset {}: {}", pre, error_offset, text);
        }
        pcre2_jit_compile(regex->code, PCRE2_JIT_COMPLETE);  // the interpreter runs if JIT is absent
        needs_collapsed_ = needs_collapsed_ || regex->collapsed;
        regexes_.push_back(std::move(regex));
    }
}

PreTokenizer::~PreTokenizer() = default;
PreTokenizer::PreTokenizer(PreTokenizer&&) noexcept = default;
PreTokenizer& PreTokenizer::operator=(PreTokenizer&&) noexcept = default;

namespace {

// Splits each piece [start, start + length) of `subject` at the regex's matches, the way
// std::regex_iterator walks it in llama.cpp's `unicode_regex_split_stl`: text between matches
// becomes a piece too, and an empty match splits without producing a piece.
std::vector<size_t> split_pieces(const pcre2_code* code, std::span<const char32_t> subject,
                                 const std::vector<size_t>& pieces) {
    std::vector<size_t> out;
    out.reserve(pieces.size() * 2);
    pcre2_match_data* match = pcre2_match_data_create_from_pattern(code, nullptr);
    size_t start = 0;
    for (size_t length : pieces) {
        const auto* piece = reinterpret_cast<PCRE2_SPTR>(subject.data() + start);
        size_t emitted = 0;  // end of the last piece emitted, relative to the piece start
        size_t search_at = 0;
        uint32_t options = 0;
        while (search_at <= length) {
            int rc = pcre2_match(code, piece, length, search_at, options, match, nullptr);
            if (rc == PCRE2_ERROR_NOMATCH && options != 0) {
                // No non-empty match right after an empty one: move on by one unit.
                options = 0;
                ++search_at;
                continue;
            }
            if (rc < 0) break;
            const PCRE2_SIZE* bounds = pcre2_get_ovector_pointer(match);
            const size_t match_begin = bounds[0], match_end = bounds[1];
            if (match_begin > emitted) out.push_back(match_begin - emitted);
            if (match_end > match_begin) out.push_back(match_end - match_begin);
            emitted = match_end;
            search_at = match_end;
            options = match_end == match_begin ? PCRE2_NOTEMPTY_ATSTART | PCRE2_ANCHORED : 0;
        }
        if (emitted < length) out.push_back(length - emitted);
        start += length;
    }
    pcre2_match_data_free(match);
    return out;
}

}  // namespace

std::vector<std::string> PreTokenizer::split(std::string_view text) const {
    const std::vector<char32_t> cpts = decode_utf8(text);
    std::vector<char32_t> collapsed, wide(cpts);
    if (needs_collapsed_) {
        collapsed.resize(cpts.size());
        for (size_t i = 0; i < cpts.size(); ++i) collapsed[i] = collapse(cpts[i]);
    }
    // Without categories the regex sees codepoints, but non-ASCII whitespace still reads as \s.
    for (char32_t& cpt : wide)
        if (cpt >= 0x80 && is_whitespace(cpt)) cpt = whitespace_marker;

    std::vector<size_t> pieces;
    if (!cpts.empty()) pieces.push_back(cpts.size());
    for (const auto& regex : regexes_)
        pieces = split_pieces(regex->code, regex->collapsed ? collapsed : wide, pieces);

    std::vector<std::string> words;
    words.reserve(pieces.size());
    size_t at = 0;
    std::string utf8;
    for (size_t length : pieces) {
        std::string word;
        for (size_t i = at; i < at + length; ++i) {
            utf8.clear();
            append_utf8(utf8, cpts[i]);
            for (char byte : utf8) word += byte_to_unicode(uint8_t(byte));
        }
        words.push_back(std::move(word));
        at += length;
    }
    return words;
}

}  // namespace vkllm::tokenizer
