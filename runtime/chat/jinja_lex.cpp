// Jinja2 lexing: the template splits into text and tags (with transformers' whitespace rules:
// trim_blocks, lstrip_blocks, "-" markers, final newline dropped), and tag contents into tokens.
#include "chat/jinja_lex.h"

#include <algorithm>
#include <cctype>

#include "core/error.h"
#include "tokenizer/unicode.h"

namespace vkllm::chat::jinja {

namespace {

int count_lines(std::string_view text) { return int(std::count(text.begin(), text.end(), '\n')); }

// End of a tag's content: the first `close` outside string literals.
size_t find_tag_end(std::string_view source, size_t from, std::string_view close) {
    char quote = 0;
    for (size_t i = from; i + 1 < source.size(); ++i) {
        const char c = source[i];
        if (quote) {
            if (c == '\\') ++i;
            else if (c == quote) quote = 0;
        } else if (c == '\'' || c == '"') {
            quote = c;
        } else if (source.compare(i, close.size(), close) == 0) {
            return i;
        }
    }
    return std::string_view::npos;
}

void strip_trailing_whitespace(std::string& text) {
    while (!text.empty() && std::isspace(uint8_t(text.back()))) text.pop_back();
}

// lstrip_blocks: spaces and tabs between the start of a line and a block tag go.
void strip_line_indent(std::string& text, bool starts_template) {
    size_t at = text.size();
    while (at > 0 && (text[at - 1] == ' ' || text[at - 1] == '\t')) --at;
    if ((at == 0 && starts_template) || (at > 0 && text[at - 1] == '\n')) text.resize(at);
}

void apply_whitespace_control(std::vector<Segment>& segments) {
    for (size_t i = 0; i < segments.size(); ++i) {
        const Segment& tag = segments[i];
        if (tag.kind == Segment::Kind::Text) continue;
        const bool is_block = tag.kind != Segment::Kind::Variable;
        if (i > 0 && segments[i - 1].kind == Segment::Kind::Text) {
            Segment& before = segments[i - 1];
            if (tag.strip_before) strip_trailing_whitespace(before.text);
            else if (is_block && !tag.keep_before) strip_line_indent(before.text, i == 1);
        }
        if (i + 1 < segments.size() && segments[i + 1].kind == Segment::Kind::Text) {
            std::string& after = segments[i + 1].text;
            if (tag.strip_after) {
                size_t at = 0;
                while (at < after.size() && std::isspace(uint8_t(after[at]))) ++at;
                after.erase(0, at);
            } else if (is_block && !after.empty() && after[0] == '\n') {
                after.erase(0, 1);  // trim_blocks
            }
        }
    }
}

bool is_raw_tag(std::string_view content, std::string_view word) {
    size_t begin = 0, end = content.size();
    while (begin < end && std::isspace(uint8_t(content[begin]))) ++begin;
    while (end > begin && std::isspace(uint8_t(content[end - 1]))) --end;
    return content.substr(begin, end - begin) == word;
}

// Start of the {% endraw %} tag that closes a {% raw %} block whose text begins at `from`.
size_t find_endraw(std::string_view source, size_t from, const std::string& name, int line) {
    for (size_t candidate = source.find("{%", from); candidate != std::string_view::npos;
         candidate = source.find("{%", candidate + 2)) {
        const size_t close = source.find("%}", candidate);
        if (close == std::string_view::npos) break;
        std::string_view inner = source.substr(candidate + 2, close - candidate - 2);
        if (!inner.empty() && inner.front() == '-') inner.remove_prefix(1);
        if (!inner.empty() && inner.back() == '-') inner.remove_suffix(1);
        if (is_raw_tag(inner, "endraw")) return candidate;
    }
    fail("{}:{}: 'raw' is never closed by 'endraw'", name, line);
}

}  // namespace

std::vector<Segment> split_segments(std::string_view source, const std::string& name) {
    if (!source.empty() && source.back() == '\n') source.remove_suffix(1);  // keep_trailing_newline=False
    std::vector<Segment> segments;
    int line = 1;
    size_t at = 0;
    auto add_text = [&](std::string_view text) {
        if (!segments.empty() && segments.back().kind == Segment::Kind::Text) segments.back().text += text;
        else segments.push_back({Segment::Kind::Text, std::string(text), line});
        line += count_lines(text);
    };
    while (at < source.size()) {
        const size_t open = source.find('{', at);
        if (open == std::string_view::npos || open + 1 >= source.size()) {
            add_text(source.substr(at));
            break;
        }
        const char second = source[open + 1];
        if (second != '{' && second != '%' && second != '#') {
            add_text(source.substr(at, open + 1 - at));
            at = open + 1;
            continue;
        }
        add_text(source.substr(at, open - at));
        Segment tag{second == '{' ? Segment::Kind::Variable : second == '%' ? Segment::Kind::Block : Segment::Kind::Comment, "", line};
        size_t content = open + 2;
        if (content < source.size() && (source[content] == '-' || source[content] == '+')) {
            (source[content] == '-' ? tag.strip_before : tag.keep_before) = true;
            ++content;
        }
        const std::string_view close = second == '{' ? "}}" : second == '%' ? "%}" : "#}";
        const size_t end = second == '#' ? source.find(close, content) : find_tag_end(source, content, close);
        if (end == std::string_view::npos) fail("{}:{}: '{}{}' is never closed", name, line, '{', second);
        size_t content_end = end;
        if (content_end > content && source[content_end - 1] == '-') {
            tag.strip_after = true;
            --content_end;
        }
        tag.text = std::string(source.substr(content, content_end - content));
        line += count_lines(source.substr(open, end + 2 - open));
        at = end + 2;
        if (tag.kind == Segment::Kind::Block && is_raw_tag(tag.text, "raw")) {
            const size_t end_tag = find_endraw(source, at, name, tag.line);
            add_text(source.substr(at, end_tag - at));
            at = source.find("%}", end_tag) + 2;
            line += count_lines(source.substr(end_tag, at - end_tag));
            continue;
        }
        segments.push_back(std::move(tag));
    }
    apply_whitespace_control(segments);
    return segments;
}

namespace {

// Python string-literal escapes, as Jinja2 decodes them ("unicode-escape"); a backslash before a
// newline continues the line.
std::string unescape(std::string_view body, const std::string& name, int line) {
    std::string out;
    for (size_t i = 0; i < body.size(); ++i) {
        if (body[i] != '\\' || i + 1 == body.size()) {
            out += body[i];
            continue;
        }
        const char c = body[++i];
        auto hex = [&](size_t digits) {
            uint32_t cpt = 0;
            for (size_t k = 1; k <= digits; ++k) {
                if (i + k >= body.size() || !std::isxdigit(uint8_t(body[i + k]))) fail("{}:{}: bad escape in a string", name, line);
                const char d = char(std::tolower(uint8_t(body[i + k])));
                cpt = cpt * 16 + uint32_t(d <= '9' ? d - '0' : d - 'a' + 10);
            }
            i += digits;
            if (cpt > 0x10FFFF) fail("{}:{}: escape beyond U+10FFFF in a string", name, line);
            tokenizer::append_utf8(out, char32_t(cpt));
        };
        switch (c) {
            case '\n': break;
            case '\\': out += '\\'; break;
            case '\'': out += '\''; break;
            case '"': out += '"'; break;
            case 'n': out += '\n'; break;
            case 't': out += '\t'; break;
            case 'r': out += '\r'; break;
            case 'b': out += '\b'; break;
            case 'f': out += '\f'; break;
            case 'v': out += '\v'; break;
            case 'a': out += '\a'; break;
            case '0': out += '\0'; break;
            case 'x': hex(2); break;
            case 'u': hex(4); break;
            case 'U': hex(8); break;
            default: out += '\\', out += c;
        }
    }
    return out;
}

}  // namespace

std::vector<Token> tokenize(std::string_view text, int line, const std::string& name) {
    static constexpr std::string_view two_char_ops[] = {"==", "!=", "<=", ">=", "//", "**"};
    static constexpr std::string_view one_char_ops = "+-*/%~<>()[]{},.:|=";
    std::vector<Token> tokens;
    for (size_t i = 0; i < text.size();) {
        const char c = text[i];
        if (c == '\n') ++line;
        if (std::isspace(uint8_t(c))) {
            ++i;
            continue;
        }
        if (std::isalpha(uint8_t(c)) || c == '_') {
            size_t end = i;
            while (end < text.size() && (std::isalnum(uint8_t(text[end])) || text[end] == '_')) ++end;
            tokens.push_back({Token::Kind::Name, std::string(text.substr(i, end - i)), line});
            i = end;
        } else if (std::isdigit(uint8_t(c))) {
            size_t end = i;
            bool is_float = false;
            while (end < text.size() && (std::isdigit(uint8_t(text[end])) || text[end] == '_')) ++end;
            if (end + 1 < text.size() && text[end] == '.' && std::isdigit(uint8_t(text[end + 1]))) {
                is_float = true;
                ++end;
                while (end < text.size() && std::isdigit(uint8_t(text[end]))) ++end;
            }
            if (end < text.size() && (text[end] == 'e' || text[end] == 'E')) {
                size_t exponent = end + 1;
                if (exponent < text.size() && (text[exponent] == '+' || text[exponent] == '-')) ++exponent;
                if (exponent < text.size() && std::isdigit(uint8_t(text[exponent]))) {
                    is_float = true;
                    end = exponent;
                    while (end < text.size() && std::isdigit(uint8_t(text[end]))) ++end;
                }
            }
            std::string digits(text.substr(i, end - i));
            std::erase(digits, '_');
            tokens.push_back({is_float ? Token::Kind::Float : Token::Kind::Int, digits, line});
            i = end;
        } else if (c == '\'' || c == '"') {
            size_t end = i + 1;
            while (end < text.size() && text[end] != c) end += text[end] == '\\' ? 2 : 1;
            if (end >= text.size()) fail("{}:{}: unterminated string literal", name, line);
            tokens.push_back({Token::Kind::String, unescape(text.substr(i + 1, end - i - 1), name, line), line});
            line += count_lines(text.substr(i, end - i));
            i = end + 1;
        } else {
            std::string op;
            for (std::string_view candidate : two_char_ops)
                if (text.compare(i, 2, candidate) == 0) op = candidate;
            if (op.empty() && one_char_ops.find(c) != std::string_view::npos) op = std::string(1, c);
            if (op.empty()) fail("{}:{}: unexpected character '{}'", name, line, c);
            tokens.push_back({Token::Kind::Operator, op, line});
            i += op.size();
        }
    }
    tokens.push_back({Token::Kind::End, "", line});
    return tokens;
}

}  // namespace vkllm::chat::jinja
