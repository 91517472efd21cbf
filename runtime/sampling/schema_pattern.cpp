#include "sampling/schema_pattern.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "core/error.h"
#include "sampling/gbnf_text.h"
#include "sampling/grammar.h"
#include "sampling/utf8.h"

namespace vkllm::sampling {
namespace {

using Ranges = std::vector<std::pair<uint32_t, uint32_t>>;

constexpr int max_group_depth = 100;

// Sorted, merged, and without surrogates (no string holds them).
Ranges normalized(Ranges ranges) {
    Ranges split;
    for (auto [first, last] : ranges) {
        last = std::min(last, max_code_point);
        if (first > last) continue;
        if (first < 0xD800 && last > 0xDFFF) {
            split.emplace_back(first, 0xD7FF);
            split.emplace_back(0xE000, last);
        } else if (!(first >= 0xD800 && last <= 0xDFFF)) {
            split.emplace_back(first >= 0xD800 && first <= 0xDFFF ? 0xE000 : first, last >= 0xD800 && last <= 0xDFFF ? 0xD7FF : last);
        }
    }
    std::ranges::sort(split);
    Ranges merged;
    for (const auto& range : split) {
        if (!merged.empty() && range.first <= merged.back().second + 1) merged.back().second = std::max(merged.back().second, range.second);
        else merged.push_back(range);
    }
    return merged;
}

Ranges complement(const Ranges& ranges) {
    Ranges out;
    uint32_t next = 0;
    for (const auto& [first, last] : normalized(ranges)) {
        if (first > next) out.emplace_back(next, first - 1);
        next = last + 1;
    }
    if (next <= max_code_point) out.emplace_back(next, max_code_point);
    return normalized(out);
}

const Ranges digits = {{'0', '9'}};
const Ranges word = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
const Ranges spaces = {{'\t', '\r'}, {' ', ' '}, {0xA0, 0xA0}, {0x1680, 0x1680}, {0x2000, 0x200A}, {0x2028, 0x2029},
                       {0x202F, 0x202F}, {0x205F, 0x205F}, {0x3000, 0x3000}, {0xFEFF, 0xFEFF}};
const Ranges line_ends = {{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}};

// A character as JSON writes it inside a string.
std::string json_encoded(uint32_t c) {
    switch (c) {
        case '"': return "\\\"";
        case '\\': return "\\\\";
        case '\b': return "\\b";
        case '\f': return "\\f";
        case '\n': return "\\n";
        case '\r': return "\\r";
        case '\t': return "\\t";
        default: break;
    }
    if (c < 0x20) return fmt::format("\\u{:04x}", c);
    std::string out;
    append_utf8(out, c);
    return out;
}

Ranges intersection(const Ranges& a, const Ranges& b) {
    Ranges out;
    for (size_t i = 0, j = 0; i < a.size() && j < b.size();) {
        const uint32_t first = std::max(a[i].first, b[j].first), last = std::min(a[i].second, b[j].second);
        if (first <= last) out.emplace_back(first, last);
        if (a[i].second < b[j].second) ++i;
        else ++j;
    }
    return out;
}

// One character of `set`, as JSON string content: those JSON takes raw in one class, the others
// (quote, backslash, control characters) as their escapes.
std::string json_char_of(const Ranges& set) {
    const Ranges escaped = normalized({{0x00, 0x1F}, {'"', '"'}, {'\\', '\\'}});
    const Ranges wanted = normalized(set);
    std::vector<std::string> alternatives;
    if (const Ranges raw = intersection(wanted, complement(escaped)); !raw.empty()) alternatives.push_back(gbnf_class(raw));
    for (const auto& [first, last] : intersection(wanted, escaped))
        for (uint32_t c = first; c <= last; ++c) alternatives.push_back(gbnf_literal(json_encoded(c)));
    if (alternatives.empty()) fail("it has a class that matches no character");
    if (alternatives.size() == 1) return alternatives[0];
    std::string out = "(";
    for (size_t i = 0; i < alternatives.size(); ++i) out += (i ? " | " : "") + alternatives[i];
    return out + ")";
}

class PatternParser {
public:
    explicit PatternParser(std::u32string pattern) : p_(std::move(pattern)) {}

    // Top-level alternatives, each anchored or padded with any characters on either side.
    std::string parse() {
        const std::string any = "[^\\x22\\x5C\\x00-\\x1F]*";  // raw characters: never an escape to get wrong
        std::vector<std::string> alternatives;
        for (;;) {
            const bool start_anchored = peek() == U'^';
            if (start_anchored) ++i_;
            bool end_anchored = false;
            std::string sequence = parse_sequence(0, &end_anchored);
            alternatives.push_back((start_anchored ? "" : any + " ") + sequence + (end_anchored ? "" : " " + any));
            if (peek() != U'|') break;
            ++i_;
        }
        if (i_ < p_.size()) fail("its ')' at character {} closes no group", i_ + 1);
        return joined(alternatives);
    }

private:
    char32_t peek(size_t ahead = 0) const { return i_ + ahead < p_.size() ? p_[i_ + ahead] : U'\0'; }
    bool at_end() const { return i_ >= p_.size(); }

    static std::string joined(const std::vector<std::string>& alternatives) {
        if (alternatives.size() == 1) return alternatives[0];
        std::string out = "(";
        for (size_t i = 0; i < alternatives.size(); ++i) out += (i ? " | " : "") + alternatives[i];
        return out + ")";
    }

    std::string parse_alternation(int depth) {
        std::vector<std::string> alternatives = {parse_sequence(depth, nullptr)};
        while (peek() == U'|') {
            ++i_;
            alternatives.push_back(parse_sequence(depth, nullptr));
        }
        return joined(alternatives);
    }

    // Items until '|', ')' or the end; at the top level (end_anchored given) a '$' before those ends it.
    std::string parse_sequence(int depth, bool* end_anchored) {
        struct Item {
            std::string gbnf;     // a GBNF expression, or
            std::string literal;  // JSON text of a character not repeated (merged with its neighbours)
        };
        std::vector<Item> items;
        while (!at_end() && peek() != U'|' && peek() != U')') {
            if (peek() == U'$' && end_anchored && (i_ + 1 == p_.size() || p_[i_ + 1] == U'|')) {
                ++i_;
                *end_anchored = true;
                break;
            }
            Item item;
            std::optional<uint32_t> single;
            std::string atom = parse_atom(depth, single);
            if (std::string quantifier = parse_quantifier(); !quantifier.empty()) {
                item.gbnf = "(" + atom + ")" + quantifier;
            } else if (single) {
                item.literal = json_encoded(*single);
            } else {
                item.gbnf = std::move(atom);
            }
            if (!item.literal.empty() && !items.empty() && !items.back().literal.empty()) items.back().literal += item.literal;
            else items.push_back(std::move(item));
        }
        if (items.empty()) return "\"\"";
        std::string out;
        for (const Item& item : items) out += (out.empty() ? "" : " ") + (item.literal.empty() ? item.gbnf : gbnf_literal(item.literal));
        return out;
    }

    // An atom as GBNF; `single` is set when it is one literal character.
    std::string parse_atom(int depth, std::optional<uint32_t>& single) {
        const size_t at = i_;
        const char32_t c = p_[i_++];
        switch (c) {
            case U'(': return parse_group(depth, at);
            case U'[': return json_char_of(parse_class());
            case U'.': return json_char_of(complement(line_ends));
            case U'\\': {
                Ranges set;
                const uint32_t escaped = parse_escape(set, false);
                if (!set.empty()) return json_char_of(set);
                single = escaped;
                return gbnf_literal(json_encoded(escaped));
            }
            case U'^': case U'$': fail("it has '{}' at character {}; anchors are supported only at its start and end",
                                       c == U'^' ? '^' : '$', at + 1);
            case U'*': case U'+': case U'?': fail("its '{}' at character {} has nothing to repeat", char(c), at + 1);
            case U'{':
                if (quantifier_ahead(at)) fail("its '{{' at character {} has nothing to repeat", at + 1);
                [[fallthrough]];
            default:
                single = uint32_t(c);
                return gbnf_literal(json_encoded(uint32_t(c)));
        }
    }

    std::string parse_group(int depth, size_t at) {
        if (depth >= max_group_depth) fail("its groups nest more than {} deep", max_group_depth);
        if (peek() == U'?') {
            if (peek(1) == U':') {
                i_ += 2;
            } else if (peek(1) == U'<' && peek(2) != U'=' && peek(2) != U'!') {
                i_ += 2;
                while (!at_end() && peek() != U'>') ++i_;
                if (at_end()) fail("its group name at character {} is not closed", at + 1);
                ++i_;
            } else {
                fail("it has a lookaround or group flag '(?' at character {}, which is not supported", at + 1);
            }
        }
        std::string inner = parse_alternation(depth + 1);
        if (peek() != U')') fail("its group opened at character {} is not closed", at + 1);
        ++i_;
        return "(" + inner + ")";
    }

    // Whether p_[at] == '{' starts a quantifier {m}, {m,} or {m,n} (otherwise it is a literal brace).
    bool quantifier_ahead(size_t at) const {
        size_t j = at + 1;
        const auto digits_from = [&](size_t k) {
            size_t n = k;
            while (n < p_.size() && p_[n] >= U'0' && p_[n] <= U'9') ++n;
            return n;
        };
        size_t after = digits_from(j);
        if (after == j) return false;
        if (after < p_.size() && p_[after] == U'}') return true;
        if (after >= p_.size() || p_[after] != U',') return false;
        after = digits_from(after + 1);
        return after < p_.size() && p_[after] == U'}';
    }

    uint64_t parse_count() {
        uint64_t value = 0;
        const size_t at = i_;
        while (peek() >= U'0' && peek() <= U'9') {
            value = std::min<uint64_t>(value * 10 + uint64_t(peek() - U'0'), Grammar::max_repetitions + 1);
            ++i_;
        }
        if (value > Grammar::max_repetitions)
            fail("its repetition count at character {} is above the {} supported", at + 1, Grammar::max_repetitions);
        return value;
    }

    // GBNF's spelling of a quantifier after an atom, or "" when none follows.
    std::string parse_quantifier() {
        std::string out;
        if (peek() == U'*' || peek() == U'+' || peek() == U'?') {
            out = std::string(1, char(peek()));
            ++i_;
        } else if (peek() == U'{' && quantifier_ahead(i_)) {
            const size_t at = i_++;
            const uint64_t min = parse_count();
            std::string max = std::to_string(min);
            if (peek() == U',') {
                ++i_;
                max = peek() == U'}' ? "" : std::to_string(parse_count());
                if (!max.empty() && std::stoull(max) < min)
                    fail("its repetition at character {} has a maximum below its minimum", at + 1);
            }
            ++i_;  // '}'
            out = max == std::to_string(min) ? fmt::format("{{{}}}", min) : fmt::format("{{{},{}}}", min, max);
        } else {
            return out;
        }
        if (peek() == U'?') ++i_;  // lazy: the same strings match
        if (peek() == U'*' || peek() == U'+' || peek() == U'?' || (peek() == U'{' && quantifier_ahead(i_)))
            fail("it repeats a repetition at character {}, which regular expressions do not allow", i_ + 1);
        return out;
    }

    uint32_t parse_hex(size_t digits) {
        uint32_t value = 0;
        for (size_t k = 0; k < digits; ++k) {
            const char32_t c = peek();
            const int digit = c >= U'0' && c <= U'9' ? int(c - U'0') : c >= U'a' && c <= U'f' ? int(c - U'a' + 10)
                            : c >= U'A' && c <= U'F' ? int(c - U'A' + 10) : -1;
            if (digit < 0) fail("its escape at character {} needs {} hex digits", i_, digits);
            value = value << 4 | uint32_t(digit);
            ++i_;
        }
        return value;
    }

    // After a backslash: a character (returned), or a class written as an escape (into `set`).
    uint32_t parse_escape(Ranges& set, bool in_class) {
        const size_t at = i_ - 1;
        if (at_end()) fail("it ends with a lone '\\'");
        const char32_t c = p_[i_++];
        switch (c) {
            case U'd': set = digits; return 0;
            case U'D': set = complement(digits); return 0;
            case U'w': set = word; return 0;
            case U'W': set = complement(word); return 0;
            case U's': set = spaces; return 0;
            case U'S': set = complement(spaces); return 0;
            case U't': return '\t';
            case U'n': return '\n';
            case U'r': return '\r';
            case U'f': return '\f';
            case U'v': return '\v';
            case U'b':
                if (in_class) return '\b';
                fail("it has a word boundary (\\b) at character {}, which is not supported", at + 1);
            case U'B': fail("it has a word boundary (\\B) at character {}, which is not supported", at + 1);
            case U'0':
                if (peek() >= U'0' && peek() <= U'9') fail("it has an octal escape at character {}, which is not supported", at + 1);
                return 0;
            case U'x': return parse_hex(2);
            case U'u': {
                if (peek() != U'{') return parse_hex(4);
                ++i_;
                uint32_t value = 0;
                size_t n = 0;
                while (peek() != U'}') {
                    if (at_end() || ++n > 6) fail("its escape '\\u{{' at character {} is not closed", at + 1);
                    value = value << 4 | parse_hex(1);
                }
                ++i_;
                if (!is_valid_code_point(value)) fail("its escape at character {} is not a Unicode character", at + 1);
                return value;
            }
            case U'p': case U'P':
                fail("it has a Unicode property escape (\\{}) at character {}, which is not supported", char(c), at + 1);
            case U'c': fail("it has a control escape (\\c) at character {}, which is not supported", at + 1);
            case U'k': fail("it has a named backreference (\\k) at character {}, which is not supported", at + 1);
            default:
                if (c >= U'1' && c <= U'9') fail("it has a backreference (\\{}) at character {}, which is not supported", char(c), at + 1);
                return uint32_t(c);  // an escaped punctuation mark is itself
        }
    }

    // After '[': the class's code points.
    Ranges parse_class() {
        const size_t at = i_ - 1;
        const bool negated = peek() == U'^';
        if (negated) ++i_;
        Ranges set;
        for (;;) {  // "[]" matches nothing and "[^]" anything, as in JavaScript
            if (at_end()) fail("its class opened at character {} is not closed", at + 1);
            if (peek() == U']') {
                ++i_;
                break;
            }
            Ranges item_set;
            const uint32_t low = class_atom(item_set);
            if (!item_set.empty()) {
                set.insert(set.end(), item_set.begin(), item_set.end());
                continue;
            }
            if (peek() == U'-' && peek(1) != U']' && i_ + 1 < p_.size()) {
                ++i_;
                Ranges high_set;
                const uint32_t high = class_atom(high_set);
                if (!high_set.empty()) fail("its class at character {} has a range ending in a class escape", at + 1);
                if (high < low) fail("its class at character {} has a range out of order", at + 1);
                set.emplace_back(low, high);
            } else {
                set.emplace_back(low, low);
            }
        }
        return negated ? complement(set) : normalized(set);
    }

    uint32_t class_atom(Ranges& set) {
        const char32_t c = p_[i_++];
        return c == U'\\' ? parse_escape(set, true) : uint32_t(c);
    }

    std::u32string p_;
    size_t i_ = 0;
};

}  // namespace

std::string pattern_to_gbnf(std::string_view pattern) {
    std::u32string code_points;
    for (std::string_view rest = pattern; !rest.empty();) {
        const Utf8Char c = decode_utf8(rest);
        if (!c.length) fail("it is not valid UTF-8");
        code_points += char32_t(c.code_point);
        rest.remove_prefix(c.length);
    }
    return PatternParser(std::move(code_points)).parse();
}

}  // namespace vkllm::sampling
