#include "sampling/grammar.h"

#include <algorithm>
#include <queue>
#include <unordered_map>

#include "core/error.h"
#include "sampling/utf8.h"

namespace vkllm::sampling {

CharSet::CharSet(std::vector<std::pair<uint32_t, uint32_t>> ranges, bool negated) {
    for (auto& range : ranges) range.second = std::min(range.second, max_code_point);
    std::erase_if(ranges, [](const auto& range) { return range.first > range.second; });
    std::ranges::sort(ranges);
    std::vector<std::pair<uint32_t, uint32_t>> merged;
    for (const auto& range : ranges) {
        if (!merged.empty() && range.first <= merged.back().second + 1) merged.back().second = std::max(merged.back().second, range.second);
        else merged.push_back(range);
    }
    if (negated) {
        std::vector<std::pair<uint32_t, uint32_t>> complement;
        uint32_t next = 0;
        for (const auto& [first, last] : merged) {
            if (first > next) complement.emplace_back(next, first - 1);
            next = last + 1;
        }
        if (next <= max_code_point) complement.emplace_back(next, max_code_point);
        merged = std::move(complement);
    }
    for (const auto& [first, last] : merged) {
        for (uint32_t c = first; c <= std::min(last, 127u); ++c) ascii_[c >> 6] |= uint64_t(1) << (c & 63);
        if (last >= 128) wide_.emplace_back(std::max(first, 128u), last);
    }
}

bool CharSet::contains_wide(uint32_t c) const {
    auto after = std::ranges::upper_bound(wide_, c, {}, &std::pair<uint32_t, uint32_t>::first);
    return after != wide_.begin() && c <= std::prev(after)->second;
}

bool CharSet::intersects(uint32_t first, uint32_t last) const {
    for (uint32_t c = first; c <= std::min(last, 127u); ++c)
        if (contains(c)) return true;
    auto range = std::ranges::lower_bound(wide_, std::max(first, 128u), {}, &std::pair<uint32_t, uint32_t>::second);
    return range != wide_.end() && range->first <= last;
}

namespace {

bool is_word_char(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

// A character of the text for an error message.
std::string shown(std::string_view text, size_t pos) {
    if (pos >= text.size()) return "the end of the grammar";
    const char c = text[pos];
    if (c == '\n' || c == '\r') return "a new line";
    const size_t length = decode_utf8(text.substr(pos)).length;
    if (uint8_t(c) < 0x20 || c == 0x7F || !length) return fmt::format("byte 0x{:02x}", uint8_t(c));
    return fmt::format("'{}'", text.substr(pos, length));
}

}  // namespace

// Recursive descent over the text, as llama.cpp's llama_grammar_parser reads it; rules are kept as
// lists of symbol sequences until compile() flattens them.
class GbnfParser {
public:
    explicit GbnfParser(std::string_view text) : text_(text) {}
    std::shared_ptr<const Grammar> parse(std::string_view root_rule);

private:
    static constexpr size_t none = size_t(-1);
    static constexpr uint64_t unbounded = UINT64_MAX;

    struct Symbol {
        Grammar::Kind kind;  // Chars or Rule
        uint32_t value;
    };
    using Sequence = std::vector<Symbol>;
    struct Rule {
        std::string name;
        std::vector<Sequence> alternatives;
        uint32_t origin = 0;     // the written rule a helper rule comes from (itself when written)
        size_t defined_at = none;
        std::string_view body;   // the definition's text, for a rule defined again
        size_t used_at = none;   // the first reference, for "never defined"
        uint32_t used_in = 0;    // the rule holding that reference
    };

    std::string line_column(size_t pos) const;
    template <class... Args>
    [[noreturn]] void fail_at(size_t pos, fmt::format_string<Args...> format, Args&&... args) const;
    bool at_end() const { return pos_ >= text_.size(); }
    char peek(size_t ahead = 0) const { return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0'; }

    void skip_space(bool newline_ok);
    std::string_view parse_name(std::string_view what);
    uint32_t parse_char();
    uint32_t parse_hex(int digits);
    uint64_t parse_count();
    void parse_rule();
    void parse_alternatives(uint32_t rule, bool nested, int depth);
    Sequence parse_sequence(bool nested, int depth);
    void parse_repetition(Sequence& sequence, size_t item_start, size_t op_pos, bool nested);
    void repeat(Sequence& sequence, size_t item_start, size_t op_pos, uint64_t min, uint64_t max);

    uint32_t rule_named(std::string_view name, size_t used_at);
    uint32_t helper_rule();
    Symbol chars(std::vector<std::pair<uint32_t, uint32_t>> ranges, bool negated);
    void count_symbols(uint64_t n, size_t pos);

    void check_defined() const;
    std::vector<uint32_t> shortest_lengths() const;
    std::vector<uint32_t> check_left_recursion(const std::vector<uint32_t>& length) const;
    void check_expansion(const std::vector<uint32_t>& length, const std::vector<uint32_t>& leftmost_order) const;
    std::shared_ptr<const Grammar> compile(uint32_t root, const std::vector<uint32_t>& length) const;

    std::string_view text_;
    size_t pos_ = 0;
    std::vector<Rule> rules_;
    std::unordered_map<std::string, uint32_t> rule_ids_;  // written rules by name
    std::vector<CharSet> char_sets_;
    std::unordered_map<uint32_t, uint32_t> single_chars_;  // code point -> its char set
    uint32_t current_ = 0;                                 // the written rule being parsed
    bool in_rule_ = false;
    uint64_t n_symbols_ = 0;
};

std::string GbnfParser::line_column(size_t pos) const {
    size_t line = 1, column = 1;
    for (size_t i = 0; i < std::min(pos, text_.size()); ++i) {
        if (text_[i] == '\n') {
            ++line;
            column = 1;
        } else if ((uint8_t(text_[i]) & 0xC0) != 0x80) {
            ++column;  // columns count characters, not bytes
        }
    }
    return fmt::format("line {}, column {}", line, column);
}

template <class... Args>
void GbnfParser::fail_at(size_t pos, fmt::format_string<Args...> format, Args&&... args) const {
    const std::string where = in_rule_ ? fmt::format(" (rule '{}')", rules_[current_].name) : "";
    throw Error(fmt::format("grammar {}{}: {}", line_column(pos), where, fmt::format(format, std::forward<Args>(args)...)));
}

void GbnfParser::skip_space(bool newline_ok) {
    while (!at_end()) {
        const char c = peek();
        if (c == '#') {
            while (!at_end() && peek() != '\r' && peek() != '\n') ++pos_;
        } else if (c == ' ' || c == '\t' || (newline_ok && (c == '\r' || c == '\n'))) {
            ++pos_;
        } else {
            break;
        }
    }
}

std::string_view GbnfParser::parse_name(std::string_view what) {
    const size_t start = pos_;
    while (is_word_char(peek())) ++pos_;
    if (pos_ == start) fail_at(pos_, "expected {} (letters, digits and '-'), found {}", what, shown(text_, pos_));
    return text_.substr(start, pos_ - start);
}

uint32_t GbnfParser::parse_hex(int digits) {
    const size_t start = pos_;
    uint32_t value = 0;
    for (int i = 0; i < digits; ++i) {
        const char c = peek();
        int digit;
        if (c >= '0' && c <= '9') digit = c - '0';
        else if (c >= 'a' && c <= 'f') digit = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F') digit = c - 'A' + 10;
        else fail_at(start - 2, "'{}' needs {} hex digits after it", text_.substr(start - 2, 2), digits);
        value = value << 4 | uint32_t(digit);
        ++pos_;
    }
    return value;
}

uint32_t GbnfParser::parse_char() {
    if (at_end()) fail_at(pos_, "unexpected end of the grammar");
    if (peek() == '\\') {
        const char escape = peek(1);
        pos_ += 2;
        switch (escape) {
            case 'x': return parse_hex(2);
            case 'u': return parse_hex(4);
            case 'U': return parse_hex(8);
            case 't': return '\t';
            case 'r': return '\r';
            case 'n': return '\n';
            case '\\': case '"': case '[': case ']': case '-': return uint32_t(escape);
            default: fail_at(pos_ - 2, "unknown escape '\\{}' (known: \\x \\u \\U \\t \\n \\r \\\\ \\\" \\[ \\] \\-)",
                             escape ? std::string(1, escape) : std::string());
        }
    }
    const Utf8Char decoded = decode_utf8(text_.substr(pos_));
    if (!decoded.length) fail_at(pos_, "invalid UTF-8 ({})", shown(text_, pos_));
    pos_ += decoded.length;
    return decoded.code_point;
}

uint64_t GbnfParser::parse_count() {
    const size_t start = pos_;
    uint64_t value = 0;
    while (is_digit(peek())) {
        value = std::min<uint64_t>(value * 10 + uint64_t(peek() - '0'), Grammar::max_repetitions + 1);
        ++pos_;
    }
    if (value > Grammar::max_repetitions)
        fail_at(start, "the repetition count {} is above the {} allowed", text_.substr(start, pos_ - start), Grammar::max_repetitions);
    return value;
}

uint32_t GbnfParser::rule_named(std::string_view name, size_t used_at) {
    auto [it, added] = rule_ids_.emplace(std::string(name), uint32_t(rules_.size()));
    if (added) rules_.push_back({.name = std::string(name), .origin = it->second});
    Rule& rule = rules_[it->second];
    if (used_at != none && rule.used_at == none) {
        rule.used_at = used_at;
        rule.used_in = current_;
    }
    return it->second;
}

uint32_t GbnfParser::helper_rule() {
    const uint32_t id = uint32_t(rules_.size());
    rules_.push_back({.name = fmt::format("{}_{}", rules_[current_].name, id), .origin = current_});
    return id;
}

GbnfParser::Symbol GbnfParser::chars(std::vector<std::pair<uint32_t, uint32_t>> ranges, bool negated) {
    const bool single = !negated && ranges.size() == 1 && ranges[0].first == ranges[0].second;
    if (single)
        if (auto it = single_chars_.find(ranges[0].first); it != single_chars_.end()) return {Grammar::Kind::Chars, it->second};
    const uint32_t index = uint32_t(char_sets_.size());
    if (single) single_chars_.emplace(ranges[0].first, index);
    char_sets_.emplace_back(std::move(ranges), negated);
    return {Grammar::Kind::Chars, index};
}

void GbnfParser::count_symbols(uint64_t n, size_t pos) {
    n_symbols_ += n;
    if (n_symbols_ > Grammar::max_elements)
        fail_at(pos, "the grammar expands to more than {} elements (repetitions included)", Grammar::max_elements);
}

void GbnfParser::parse_rule() {
    const size_t start = pos_;
    in_rule_ = false;
    const std::string_view name = parse_name("a rule name");
    skip_space(false);
    if (text_.substr(pos_, 3) != "::=") fail_at(pos_, "expected '::=' after the rule name '{}', found {}", name, shown(text_, pos_));
    pos_ += 3;
    current_ = rule_named(name, none);
    // A rule may come again with the same text, as grammars joined together repeat the rules they
    // share (json_schema_to_gbnf's primitives); the second is parsed, then left unused.
    const bool again = rules_[current_].defined_at != none;
    in_rule_ = true;
    skip_space(true);
    const size_t body_start = pos_;
    parse_alternatives(again ? helper_rule() : current_, false, 0);
    std::string_view body = text_.substr(body_start, pos_ - body_start);
    while (!body.empty() && (body.back() == ' ' || body.back() == '\t')) body.remove_suffix(1);
    if (again && body != rules_[current_].body)
        fail_at(start, "the rule is defined a second time, differently (first at {})", line_column(rules_[current_].defined_at));
    if (!again) {
        rules_[current_].defined_at = start;
        rules_[current_].body = body;
    }
    if (peek() == '\r') pos_ += peek(1) == '\n' ? 2 : 1;
    else if (peek() == '\n') ++pos_;
    else if (!at_end()) fail_at(pos_, "unexpected {} (expected a symbol, '|', or a new line ending the rule)", shown(text_, pos_));
    skip_space(true);
}

void GbnfParser::parse_alternatives(uint32_t rule, bool nested, int depth) {
    std::vector<Sequence> alternatives;
    alternatives.push_back(parse_sequence(nested, depth));
    while (peek() == '|') {
        ++pos_;
        skip_space(true);
        alternatives.push_back(parse_sequence(nested, depth));
    }
    count_symbols(alternatives.size(), pos_);  // their End elements
    rules_[rule].alternatives = std::move(alternatives);
}

GbnfParser::Sequence GbnfParser::parse_sequence(bool nested, int depth) {
    Sequence sequence;
    size_t item_start = none;  // where the last item (a string counts as one) begins, for repetitions
    while (!at_end()) {
        const size_t at = pos_;
        const char c = peek();
        if (c == '"') {
            ++pos_;
            item_start = sequence.size();
            while (peek() != '"') {
                if (at_end()) fail_at(at, "the string is not closed");
                const uint32_t code_point = parse_char();
                sequence.push_back(chars({{code_point, code_point}}, false));
                count_symbols(1, at);
            }
            ++pos_;
        } else if (c == '[') {
            ++pos_;
            const bool negated = peek() == '^';
            if (negated) ++pos_;
            std::vector<std::pair<uint32_t, uint32_t>> ranges;
            while (peek() != ']') {
                if (at_end()) fail_at(at, "the character class is not closed");
                const uint32_t first = parse_char();
                uint32_t last = first;
                if (peek() == '-' && peek(1) != ']') {
                    if (pos_ + 1 >= text_.size()) fail_at(at, "the character class is not closed");
                    ++pos_;
                    last = parse_char();
                }
                ranges.emplace_back(first, last);
            }
            if (ranges.empty()) fail_at(at, "the character class is empty");
            ++pos_;
            item_start = sequence.size();
            sequence.push_back(chars(std::move(ranges), negated));
            count_symbols(1, at);
        } else if (is_word_char(c)) {
            const std::string_view name = parse_name("a rule name");
            item_start = sequence.size();
            sequence.push_back({Grammar::Kind::Rule, rule_named(name, at)});
            count_symbols(1, at);
        } else if (c == '(') {
            if (depth >= Grammar::max_nesting) fail_at(at, "groups nest more than {} deep", Grammar::max_nesting);
            ++pos_;
            skip_space(true);
            const uint32_t group = helper_rule();
            parse_alternatives(group, true, depth + 1);
            if (peek() != ')')
                fail_at(pos_, "expected ')' to close the group opened at {}, found {}", line_column(at), shown(text_, pos_));
            ++pos_;
            item_start = sequence.size();
            sequence.push_back({Grammar::Kind::Rule, group});
            count_symbols(1, at);
        } else if (c == '.') {
            ++pos_;
            item_start = sequence.size();
            sequence.push_back(chars({{0, max_code_point}}, false));
            count_symbols(1, at);
        } else if (c == '*' || c == '+' || c == '?' || c == '{') {
            parse_repetition(sequence, item_start, at, nested);
            continue;  // parse_repetition skipped the space after it
        } else if (c == '<' || c == '!') {
            fail_at(at, "token references ('<...>', '!<...>') are not supported; write the text");
        } else {
            break;
        }
        skip_space(nested);
    }
    return sequence;
}

void GbnfParser::parse_repetition(Sequence& sequence, size_t item_start, size_t op_pos, bool nested) {
    const char op = peek();
    ++pos_;
    skip_space(nested);
    if (op != '{') return repeat(sequence, item_start, op_pos, op == '+' ? 1 : 0, op == '?' ? 1 : unbounded);
    if (!is_digit(peek())) fail_at(pos_, "expected a number after '{{', found {}", shown(text_, pos_));
    const uint64_t min = parse_count();
    uint64_t max = min;
    skip_space(nested);
    if (peek() == ',') {
        ++pos_;
        skip_space(nested);
        max = unbounded;
        if (is_digit(peek())) {
            max = parse_count();
            skip_space(nested);
        }
    }
    if (peek() != '}') fail_at(pos_, "expected '}}' to close the repetition, found {}", shown(text_, pos_));
    ++pos_;
    skip_space(nested);
    if (max < min) fail_at(op_pos, "the repetition's maximum {} is below its minimum {}", max, min);
    repeat(sequence, item_start, op_pos, min, max);
}

// llama.cpp's rewrite: S{m,n} -> S (m times) S'(n-m), S'(k) ::= S S'(k-1) | (empty); S{m,} -> S (m
// times) S*, S* ::= S S* | (empty). An item of several symbols becomes one helper rule first.
void GbnfParser::repeat(Sequence& sequence, size_t item_start, size_t op_pos, uint64_t min, uint64_t max) {
    if (item_start == none || item_start == sequence.size())
        fail_at(op_pos, "'{}' has nothing before it to repeat", text_[op_pos]);
    Sequence item(sequence.begin() + ptrdiff_t(item_start), sequence.end());
    sequence.resize(item_start);
    Symbol symbol = item.front();
    if (item.size() > 1) {
        const uint32_t wrapper = helper_rule();
        rules_[wrapper].alternatives = {std::move(item)};
        count_symbols(1, op_pos);
        symbol = {Grammar::Kind::Rule, wrapper};
    }
    const uint64_t optional = max == unbounded ? 1 : max - min;
    count_symbols(min + 5 * optional, op_pos);
    sequence.insert(sequence.end(), size_t(min), symbol);
    if (max == unbounded) {
        const uint32_t star = helper_rule();
        rules_[star].alternatives = {{symbol, {Grammar::Kind::Rule, star}}, {}};
        sequence.push_back({Grammar::Kind::Rule, star});
        return;
    }
    uint32_t tail = 0;
    for (uint64_t k = 1; k <= optional; ++k) {
        const uint32_t rule = helper_rule();
        Sequence once = {symbol};
        if (k > 1) once.push_back({Grammar::Kind::Rule, tail});
        rules_[rule].alternatives = {std::move(once), {}};
        tail = rule;
    }
    if (optional) sequence.push_back({Grammar::Kind::Rule, tail});
}

void GbnfParser::check_defined() const {
    const Rule* missing = nullptr;
    for (const Rule& rule : rules_)
        if (rule.alternatives.empty() && rule.defined_at == none && (!missing || rule.used_at < missing->used_at)) missing = &rule;
    if (!missing) return;
    GbnfParser& self = const_cast<GbnfParser&>(*this);
    self.current_ = missing->used_in;
    self.in_rule_ = true;
    fail_at(missing->used_at, "rule '{}' is used but never defined", missing->name);
}

namespace {

uint32_t add_lengths(uint32_t a, uint32_t b) { return a >= Grammar::none_shorter - b ? Grammar::none_shorter : a + b; }

}  // namespace

// Each rule's fewest code points (none_shorter where nothing finishes it): Knuth's generalization of
// Dijkstra's algorithm, each rule settled once in order of length. Relaxing every rule to a fixed
// point would be quadratic on a chain of rules written callee-last ("r1 ::= "a" r2", "r2 ::= ...").
std::vector<uint32_t> GbnfParser::shortest_lengths() const {
    const size_t n = rules_.size();
    struct Alternative {
        uint32_t rule;
        uint32_t length;     // of its characters and settled rules so far
        uint32_t unsettled;  // references to rules not settled yet
    };
    std::vector<Alternative> alternatives;
    std::vector<std::vector<uint32_t>> referrers(n);  // per rule: the alternatives referring to it, once per reference
    using Candidate = std::pair<uint32_t, uint32_t>;  // a length, a rule
    std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
    for (uint32_t r = 0; r < n; ++r)
        for (const Sequence& sequence : rules_[r].alternatives) {
            Alternative alternative{r, 0, 0};
            for (Symbol s : sequence) {
                if (s.kind == Grammar::Kind::Chars) {
                    alternative.length = add_lengths(alternative.length, 1);
                } else {
                    ++alternative.unsettled;
                    referrers[s.value].push_back(uint32_t(alternatives.size()));
                }
            }
            if (alternative.unsettled == 0) queue.emplace(alternative.length, r);
            alternatives.push_back(alternative);
        }
    std::vector<uint32_t> length(n, Grammar::none_shorter);
    std::vector<bool> settled(n);
    while (!queue.empty()) {
        const auto [shortest, rule] = queue.top();
        queue.pop();
        if (settled[rule]) continue;
        settled[rule] = true;
        length[rule] = shortest;
        for (uint32_t index : referrers[rule]) {
            Alternative& alternative = alternatives[index];
            alternative.length = add_lengths(alternative.length, shortest);
            if (--alternative.unsettled == 0 && !settled[alternative.rule]) queue.emplace(alternative.length, alternative.rule);
        }
    }
    return length;
}

// Rules that can reach themselves before matching a character would expand forever; llama.cpp
// refuses them too (llama_grammar_detect_left_recursion). Returns the rules in an order where each
// comes after those it may begin with (a post-order of that graph), for check_expansion.
std::vector<uint32_t> GbnfParser::check_left_recursion(const std::vector<uint32_t>& length) const {
    const size_t n = rules_.size();
    std::vector<std::vector<uint32_t>> leftmost(n);
    for (size_t r = 0; r < n; ++r)
        for (const Sequence& alternative : rules_[r].alternatives)
            for (Symbol s : alternative) {
                if (s.kind != Grammar::Kind::Rule) break;
                leftmost[r].push_back(s.value);
                if (length[s.value] != 0) break;  // not nullable: nothing after it can come first
            }
    // Iterative depth-first search: helper chains of a long repetition are deeper than a call stack.
    enum : uint8_t { unseen, active, done };
    std::vector<uint8_t> state(n, unseen);
    std::vector<std::pair<uint32_t, size_t>> path;
    std::vector<uint32_t> finished;
    finished.reserve(n);
    for (uint32_t start = 0; start < n; ++start) {
        if (state[start] != unseen) continue;
        path.emplace_back(start, 0);
        state[start] = active;
        while (!path.empty()) {
            auto& [rule, next] = path.back();
            if (next == leftmost[rule].size()) {
                state[rule] = done;
                finished.push_back(rule);
                path.pop_back();
                continue;
            }
            const uint32_t to = leftmost[rule][next++];
            if (state[to] == active) {
                const Rule& origin = rules_[rules_[to].origin];
                throw Error(fmt::format("grammar: rule '{}' is left-recursive (it reaches itself before matching a character), "
                                        "which the grammar engine cannot run; rewrite it to match a character first",
                                        origin.name));
            }
            if (state[to] == unseen) {
                state[to] = active;
                path.emplace_back(to, 0);
            }
        }
    }
    return finished;
}

// What the matcher does where a rule stands next (GrammarMatcher::expand): one open stack per way a
// character may come next, reached through the rules that begin it. Counted here for every position
// of the grammar, so that a grammar whose expansion would pass the matcher's limits (an alternation
// of 8,000, `"a"?` written 70,000 times, ("a"{0,n}){0,n}, rules nested 100,000 deep before their
// first character) is refused when it is parsed, in time linear in its size, not on the first token.
void GbnfParser::check_expansion(const std::vector<uint32_t>& length, const std::vector<uint32_t>& leftmost_order) const {
    struct Cost {
        uint64_t ways = 0, steps = 0;  // open stacks; rule and character nodes visited
    };
    constexpr uint64_t cap = uint64_t(1) << 40;  // sums saturate here: nested alternations multiply
    const auto add = [&](Cost a, Cost b) { return Cost{std::min(cap, a.ways + b.ways), std::min(cap, a.steps + b.steps)}; };
    const Cost character{1, 1};
    std::vector<Cost> rule_cost(rules_.size());
    const auto refuse = [&](uint32_t rule, Cost cost) {
        const std::string& name = rules_[rules_[rule].origin].name;
        if (cost.ways > Grammar::max_ways)
            throw Error(fmt::format("grammar: rule '{}' may go on in more than {} ways at once (an alternation, enum or run of "
                                    "optional items this wide), more than the grammar engine follows",
                                    name, Grammar::max_ways));
        if (cost.steps > Grammar::max_expansion_steps)
            throw Error(fmt::format("grammar: rule '{}' takes more than {} rule expansions to reach a character (rules nested "
                                    "that deep before their first character), more than the grammar engine follows",
                                    name, Grammar::max_expansion_steps));
    };
    // A rule's own expansion: its alternatives' leading characters through the rules they begin with,
    // which come earlier in leftmost_order. An alternative that may be empty is a step back to the
    // caller's continuation, which is one way however many lead there (counted where it stands, and
    // once more here, where the rule is checked alone).
    for (uint32_t r : leftmost_order) {
        Cost cost{0, 1};
        for (const Sequence& alternative : rules_[r].alternatives) {
            bool reaches_end = true;
            for (Symbol s : alternative) {
                if (s.kind == Grammar::Kind::Chars) {
                    cost = add(cost, character);
                    reaches_end = false;
                    break;
                }
                cost = add(cost, rule_cost[s.value]);
                if (length[s.value] != 0) {
                    reaches_end = false;
                    break;
                }
            }
            if (reaches_end) cost = add(cost, Cost{0, 1});
        }
        refuse(r, add(cost, length[r] == 0 ? Cost{1, 0} : Cost{}));
        rule_cost[r] = cost;
    }
    // Each position's: the rule there, and what follows while everything before may be empty.
    for (uint32_t r = 0; r < rules_.size(); ++r)
        for (const Sequence& alternative : rules_[r].alternatives) {
            Cost from_here;  // the alternative's end: the caller's continuation, counted where it stands
            for (size_t i = alternative.size(); i-- > 0;) {
                const Symbol s = alternative[i];
                if (s.kind == Grammar::Kind::Chars) from_here = character;
                else from_here = add(rule_cost[s.value], length[s.value] == 0 ? from_here : Cost{});
                refuse(r, from_here);
            }
        }
}

std::shared_ptr<const Grammar> GbnfParser::compile(uint32_t root, const std::vector<uint32_t>& length) const {
    if (length[root] == Grammar::none_shorter)
        throw Error(fmt::format("grammar: rule '{}' can never finish: each of its alternatives needs a rule that needs it again, "
                                "so no text matches it", rules_[root].name));
    std::shared_ptr<Grammar> grammar(new Grammar());
    grammar->elements_.reserve(size_t(n_symbols_));
    for (const Rule& rule : rules_) {
        grammar->rule_alternatives_.push_back(uint32_t(grammar->alternative_starts_.size()));
        for (const Sequence& alternative : rule.alternatives) {
            grammar->alternative_starts_.push_back(uint32_t(grammar->elements_.size()));
            for (Symbol s : alternative) grammar->elements_.push_back({s.kind, s.value});
            grammar->elements_.push_back({Grammar::Kind::End, 0});
        }
        grammar->rule_names_.push_back(rule.name);
    }
    grammar->rule_alternatives_.push_back(uint32_t(grammar->alternative_starts_.size()));
    grammar->char_sets_ = char_sets_;
    grammar->root_ = root;
    grammar->measure_rest(length);
    return grammar;
}

// Each position's shortest finish of its alternative, from the rules' shortest matches.
void Grammar::measure_rest(const std::vector<uint32_t>& rule_length) {
    rest_length_.assign(elements_.size(), 0);
    for (size_t i = elements_.size(); i-- > 0;) {
        const Element& element = elements_[i];
        if (element.kind == Kind::End) continue;
        rest_length_[i] = add_lengths(element.kind == Kind::Chars ? 1 : rule_length[element.value], rest_length_[i + 1]);
    }
}

std::shared_ptr<const Grammar> GbnfParser::parse(std::string_view root_rule) {
    if (text_.size() > Grammar::max_text_bytes)
        throw Error(fmt::format("grammar: the text is {} bytes, more than the {} accepted", text_.size(), Grammar::max_text_bytes));
    if (const size_t nul = text_.find('\0'); nul != std::string_view::npos) fail_at(nul, "the grammar holds a NUL byte");
    skip_space(true);
    while (!at_end()) parse_rule();
    in_rule_ = false;
    check_defined();
    const auto root = rule_ids_.find(std::string(root_rule));
    if (root == rule_ids_.end()) throw Error(fmt::format("grammar: there is no '{}' rule to start from", root_rule));
    const std::vector<uint32_t> length = shortest_lengths();
    check_expansion(length, check_left_recursion(length));
    return compile(root->second, length);
}

std::shared_ptr<const Grammar> Grammar::parse(std::string_view text, std::string_view root_rule) {
    return GbnfParser(text).parse(root_rule);
}

}  // namespace vkllm::sampling
