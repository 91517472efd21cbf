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
// Latin, Greek, Cyrillic, ... letter ranges of DeepSeek LLM's tokenizer.json, verbatim.
constexpr std::string_view deepseek_llm_letters =
    "\\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-ώᾀ-ᾴᾶ-ᾼιῂ-ῄῆ-ῌῐ-ΐῖ-Ίῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤΩℨK-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]+";

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
         {"[\r\n]", deepseek_llm_letters, "\\s?[!-/:-~！-／：-～‘-‟　-。]+", R"(\s+$)",
          "[一-龥ࠀ-一가-퟿]+", R"(\p{N}+)"}},
        {{"deepseek-coder"},
         {"[\r\n]", R"(\s?\p{L}+)", R"(\s?\p{P}+)", "[一-龥ࠀ-一가-퟿]+", R"(\p{N})"}},
        {{"deepseek-v3", "hunyuan-dense", "joyai-llm"},
         {R"(\p{N}{1,3})", "[一-龥぀-ゟ゠-ヿ]+", deepseek3_regex}},
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
        {{"poro-chat", "bloom", "gpt3-finnish"}, {R"( ?[^(\s|.,!?…。，、।۔،)]+)"}},
        {{"viking"}, {R"( ?[^(\s|.,!?…。，、।۔،)]+)", R"(\p{N})"}},
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
