// Recursive-descent parser of the Jinja2 subset, with Jinja2's operator precedence:
// ternary < or < and < not < comparison < + - < ~ < * / // % < ** < unary < filters/tests < postfix.
#include <charconv>
#include <set>

#include "chat/jinja_ast.h"
#include "chat/jinja_lex.h"
#include "core/error.h"

namespace vkllm::chat::jinja {

namespace {

constexpr int max_depth = 200;  // nesting of expressions and blocks: deep enough, never a stack overflow

class ExprParser {
public:
    ExprParser(std::vector<Token> tokens, const std::string& name) : tokens_(std::move(tokens)), name_(name) {}

    const Token& peek(size_t ahead = 0) const { return tokens_[std::min(at_ + ahead, tokens_.size() - 1)]; }
    bool at_end() const { return peek().kind == Token::Kind::End; }
    bool is_op(std::string_view op, size_t ahead = 0) const {
        return peek(ahead).kind == Token::Kind::Operator && peek(ahead).text == op;
    }
    bool is_name(std::string_view word, size_t ahead = 0) const {
        return peek(ahead).kind == Token::Kind::Name && peek(ahead).text == word;
    }
    const Token& next() {
        const Token& token = peek();
        if (!at_end()) ++at_;
        return token;
    }
    [[noreturn]] void error(std::string_view what) const {
        const Token& token = peek();
        fail("{}:{}: {} (at '{}')", name_, token.line, what, token.kind == Token::Kind::End ? "end of tag" : token.text);
    }
    void expect_op(std::string_view op) {
        if (!is_op(op)) error(fmt::format("expected '{}'", op));
        next();
    }
    std::string expect_name() {
        if (peek().kind != Token::Kind::Name) error("expected a name");
        return next().text;
    }
    void expect_end() {
        if (!at_end()) error("unexpected token");
    }

    ExprPtr expression(bool allow_ternary = true) {
        DepthGuard guard(*this);
        ExprPtr value = or_expr();
        if (allow_ternary && is_name("if")) {
            const int line = next().line;
            ExprPtr condition = or_expr();
            ExprPtr otherwise;
            if (is_name("else")) {
                next();
                otherwise = expression();
            }
            auto node = make(Expr::Kind::Ternary, line);
            node->args.push_back(std::move(value));
            node->args.push_back(std::move(condition));
            node->args.push_back(std::move(otherwise));
            return node;
        }
        return value;
    }

private:
    struct DepthGuard {
        explicit DepthGuard(ExprParser& p) : parser(p) {
            if (++parser.depth_ > max_depth) parser.error("expression nested too deeply");
        }
        ~DepthGuard() { --parser.depth_; }
        ExprParser& parser;
    };

    static ExprPtr make(Expr::Kind kind, int line) {
        auto node = std::make_unique<Expr>();
        node->kind = kind;
        node->line = line;
        return node;
    }
    static ExprPtr binary(std::string op, ExprPtr left, ExprPtr right, int line) {
        auto node = make(Expr::Kind::Binary, line);
        node->name = std::move(op);
        node->args.push_back(std::move(left));
        node->args.push_back(std::move(right));
        return node;
    }

    ExprPtr or_expr() {
        ExprPtr left = and_expr();
        while (is_name("or")) {
            const int line = next().line;
            left = binary("or", std::move(left), and_expr(), line);
        }
        return left;
    }
    ExprPtr and_expr() {
        ExprPtr left = not_expr();
        while (is_name("and")) {
            const int line = next().line;
            left = binary("and", std::move(left), not_expr(), line);
        }
        return left;
    }
    ExprPtr not_expr() {
        if (is_name("not")) {
            DepthGuard guard(*this);
            auto node = make(Expr::Kind::Unary, next().line);
            node->name = "not";
            node->args.push_back(not_expr());
            return node;
        }
        return comparison();
    }
    ExprPtr comparison() {
        ExprPtr left = additive();
        for (;;) {
            std::string op;
            if (peek().kind == Token::Kind::Operator &&
                (is_op("==") || is_op("!=") || is_op("<") || is_op(">") || is_op("<=") || is_op(">=")))
                op = peek().text;
            else if (is_name("in")) op = "in";
            else if (is_name("not") && is_name("in", 1)) op = "not in";
            else return left;
            const int line = next().line;
            if (op == "not in") next();
            left = binary(op, std::move(left), additive(), line);
        }
    }
    ExprPtr additive() {
        ExprPtr left = concat();
        while (is_op("+") || is_op("-")) {
            const Token& op = next();
            left = binary(op.text, std::move(left), concat(), op.line);
        }
        return left;
    }
    ExprPtr concat() {
        ExprPtr left = multiplicative();
        while (is_op("~")) {
            const int line = next().line;
            left = binary("~", std::move(left), multiplicative(), line);
        }
        return left;
    }
    ExprPtr multiplicative() {
        ExprPtr left = power();
        while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
            const Token& op = next();
            left = binary(op.text, std::move(left), power(), op.line);
        }
        return left;
    }
    ExprPtr power() {
        ExprPtr left = unary();
        while (is_op("**")) {
            const int line = next().line;
            left = binary("**", std::move(left), unary(), line);
        }
        return left;
    }
    ExprPtr unary() {
        DepthGuard guard(*this);
        if (is_op("-") || is_op("+")) {
            auto node = make(Expr::Kind::Unary, peek().line);
            node->name = next().text;
            node->args.push_back(unary());
            return filters_and_tests(std::move(node));
        }
        return filters_and_tests(postfix(primary()));
    }

    ExprPtr primary();
    ExprPtr collection(int line);  // [a, b] or {k: v}
    ExprPtr postfix(ExprPtr value);
    ExprPtr filters_and_tests(ExprPtr value);
    void call_arguments(Expr& call);

    std::vector<Token> tokens_;
    size_t at_ = 0;
    int depth_ = 0;
    const std::string& name_;
};

ExprPtr ExprParser::primary() {
    const Token& token = peek();
    switch (token.kind) {
        case Token::Kind::String: {
            auto node = make(Expr::Kind::Literal, token.line);
            std::string text;
            while (peek().kind == Token::Kind::String) text += next().text;  // adjacent literals join
            node->value = Value(std::move(text));
            return node;
        }
        case Token::Kind::Int: case Token::Kind::Float: {
            auto node = make(Expr::Kind::Literal, token.line);
            const std::string& digits = next().text;
            if (token.kind == Token::Kind::Float) {
                node->value = Value(std::stod(digits));
            } else {
                int64_t number = 0;
                auto [end, status] = std::from_chars(digits.data(), digits.data() + digits.size(), number);
                if (status != std::errc()) fail("{}:{}: integer literal {} is out of range", name_, token.line, digits);
                node->value = Value(number);
            }
            return node;
        }
        case Token::Kind::Name: {
            const std::string& word = next().text;
            auto node = make(Expr::Kind::Literal, token.line);
            if (word == "true" || word == "True") node->value = Value(true);
            else if (word == "false" || word == "False") node->value = Value(false);
            else if (word == "none" || word == "None") node->value = Value::none();
            else {
                node->kind = Expr::Kind::Name;
                node->name = word;
            }
            return node;
        }
        case Token::Kind::Operator: {
            const int line = token.line;
            if (is_op("(")) {
                next();
                ExprPtr first = expression();
                if (is_op(")")) {
                    next();
                    return first;
                }
                auto tuple = make(Expr::Kind::List, line);  // a tuple behaves as a list here
                tuple->args.push_back(std::move(first));
                while (is_op(",")) {
                    next();
                    if (is_op(")")) break;
                    tuple->args.push_back(expression());
                }
                expect_op(")");
                return tuple;
            }
            if (is_op("[") || is_op("{")) return collection(line);
            break;
        }
        default: break;
    }
    error("expected a value");
}

ExprPtr ExprParser::collection(int line) {
    const bool is_list = is_op("[");
    next();
    auto node = make(is_list ? Expr::Kind::List : Expr::Kind::Dict, line);
    const std::string_view close = is_list ? "]" : "}";
    while (!is_op(close)) {
        node->args.push_back(expression());
        if (!is_list) {
            expect_op(":");
            node->args.push_back(expression());
        }
        if (!is_op(",")) break;
        next();
    }
    expect_op(close);
    return node;
}

ExprPtr ExprParser::postfix(ExprPtr value) {
    for (;;) {
        const int line = peek().line;
        if (is_op(".")) {
            next();
            auto node = make(Expr::Kind::Attr, line);
            if (peek().kind == Token::Kind::Int) node->kind = Expr::Kind::Item;  // x.0 is x[0]
            if (node->kind == Expr::Kind::Item) {
                auto index = make(Expr::Kind::Literal, line);
                index->value = Value(int64_t(std::stoll(next().text)));
                node->args.push_back(std::move(value));
                node->args.push_back(std::move(index));
            } else {
                node->name = expect_name();
                node->args.push_back(std::move(value));
            }
            value = std::move(node);
        } else if (is_op("[")) {
            next();
            ExprPtr parts[3];
            bool is_slice = false;
            for (int part = 0; part < 3; ++part) {
                if (!is_op(":") && !is_op("]")) parts[part] = expression();
                if (!is_op(":") || part == 2) break;
                next();
                is_slice = true;
            }
            expect_op("]");
            auto node = make(is_slice ? Expr::Kind::Slice : Expr::Kind::Item, line);
            if (!is_slice && !parts[0]) error("empty subscript");
            node->args.push_back(std::move(value));
            for (int part = 0; part < (is_slice ? 3 : 1); ++part) node->args.push_back(std::move(parts[part]));
            value = std::move(node);
        } else if (is_op("(")) {
            auto node = make(Expr::Kind::Call, line);
            node->args.push_back(std::move(value));
            call_arguments(*node);
            value = std::move(node);
        } else {
            return value;
        }
    }
}

void ExprParser::call_arguments(Expr& call) {
    expect_op("(");
    while (!is_op(")")) {
        if (peek().kind == Token::Kind::Name && is_op("=", 1)) {
            std::string key = next().text;
            next();
            call.kwargs.emplace_back(std::move(key), expression());
        } else {
            if (!call.kwargs.empty()) error("positional argument after a keyword argument");
            call.args.push_back(expression());
        }
        if (!is_op(",")) break;
        next();
    }
    expect_op(")");
}

ExprPtr ExprParser::filters_and_tests(ExprPtr value) {
    for (;;) {
        if (is_op("|")) {
            auto node = make(Expr::Kind::Filter, next().line);
            node->name = expect_name();
            node->args.push_back(std::move(value));
            if (is_op("(")) call_arguments(*node);
            value = postfix(std::move(node));
        } else if (is_name("is")) {
            auto node = make(Expr::Kind::Test, next().line);
            if (is_name("not")) {
                next();
                node->negated = true;
            }
            node->name = expect_name();
            node->args.push_back(std::move(value));
            if (is_op("(")) {
                call_arguments(*node);
            } else if (peek().kind == Token::Kind::String || peek().kind == Token::Kind::Int ||
                       peek().kind == Token::Kind::Float ||
                       (peek().kind == Token::Kind::Name && !is_name("else") && !is_name("and") && !is_name("or") &&
                        !is_name("if") && !is_name("in") && !is_name("not") && !is_name("is"))) {
                node->args.push_back(primary());  // `x is divisibleby 3`
            }
            value = std::move(node);
        } else {
            return value;
        }
    }
}

// Statements: the segments become a tree of bodies; block tags are parsed by keyword.
class TemplateParser {
public:
    TemplateParser(std::vector<Segment> segments, const std::string& name) : segments_(std::move(segments)), name_(name) {}

    Body parse_all() {
        Body body = parse_body({});
        if (at_ < segments_.size()) {
            const Segment& stray = segments_[at_];
            fail("{}:{}: unexpected '{}'", name_, stray.line, keyword_of(stray));
        }
        return body;
    }

private:
    static std::string keyword_of(const Segment& segment) {
        const size_t begin = segment.text.find_first_not_of(" \t\r\n");
        if (begin == std::string::npos) return "";
        const size_t end = segment.text.find_first_of(" \t\r\n", begin);
        return segment.text.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
    }

    // Parses until a block tag whose keyword is in `stops` (left unconsumed) or the end.
    Body parse_body(const std::set<std::string>& stops);
    std::unique_ptr<Node> parse_block(const Segment& segment);
    std::unique_ptr<Node> parse_if(ExprParser& tokens, int line);
    std::unique_ptr<Node> parse_for(ExprParser& tokens, int line);
    std::unique_ptr<Node> parse_set(ExprParser& tokens, int line);
    std::unique_ptr<Node> parse_macro(ExprParser& tokens, int line);
    // Consumes the closing tag `keyword` (and checks nothing follows it in the tag).
    void close(const std::string& keyword, int opened_at);

    static std::unique_ptr<Node> make(Node::Kind kind, int line) {
        auto node = std::make_unique<Node>();
        node->kind = kind;
        node->line = line;
        return node;
    }

    std::vector<Segment> segments_;
    size_t at_ = 0;
    int depth_ = 0;
    const std::string& name_;
};

Body TemplateParser::parse_body(const std::set<std::string>& stops) {
    if (++depth_ > max_depth)
        fail("{}:{}: blocks nested too deeply", name_, segments_[std::min(at_, segments_.size() - 1)].line);
    Body body;
    while (at_ < segments_.size()) {
        const Segment& segment = segments_[at_];
        switch (segment.kind) {
            case Segment::Kind::Text:
                if (!segment.text.empty()) {
                    auto node = make(Node::Kind::Text, segment.line);
                    node->text = segment.text;
                    body.push_back(std::move(node));
                }
                ++at_;
                break;
            case Segment::Kind::Comment: ++at_; break;
            case Segment::Kind::Variable: {
                ExprParser tokens(tokenize(segment.text, segment.line, name_), name_);
                auto node = make(Node::Kind::Output, segment.line);
                node->exprs.push_back(tokens.expression());
                tokens.expect_end();
                body.push_back(std::move(node));
                ++at_;
                break;
            }
            case Segment::Kind::Block:
                if (stops.count(keyword_of(segment))) {
                    --depth_;
                    return body;
                }
                ++at_;
                body.push_back(parse_block(segment));
                break;
        }
    }
    --depth_;
    return body;
}

std::unique_ptr<Node> TemplateParser::parse_block(const Segment& segment) {
    ExprParser tokens(tokenize(segment.text, segment.line, name_), name_);
    const std::string keyword = tokens.expect_name();
    if (keyword == "if") return parse_if(tokens, segment.line);
    if (keyword == "for") return parse_for(tokens, segment.line);
    if (keyword == "set") return parse_set(tokens, segment.line);
    if (keyword == "macro") return parse_macro(tokens, segment.line);
    if (keyword == "break" || keyword == "continue") {
        tokens.expect_end();
        return make(keyword == "break" ? Node::Kind::Break : Node::Kind::Continue, segment.line);
    }
    fail("{}:{}: unknown or unsupported tag '{}'", name_, segment.line, keyword);
}

void TemplateParser::close(const std::string& keyword, int opened_at) {
    if (at_ >= segments_.size()) fail("{}:{}: block opened here is never closed by '{}'", name_, opened_at, keyword);
    const Segment& segment = segments_[at_++];
    ExprParser tokens(tokenize(segment.text, segment.line, name_), name_);
    if (tokens.expect_name() != keyword) fail("{}:{}: expected '{}'", name_, segment.line, keyword);
    tokens.expect_end();
}

std::unique_ptr<Node> TemplateParser::parse_if(ExprParser& tokens, int line) {
    auto node = make(Node::Kind::If, line);
    node->exprs.push_back(tokens.expression());
    tokens.expect_end();
    const std::set<std::string> stops = {"elif", "else", "endif"};
    node->bodies.push_back(parse_body(stops));
    for (;;) {
        if (at_ >= segments_.size()) fail("{}:{}: 'if' is never closed by 'endif'", name_, line);
        const Segment& segment = segments_[at_];
        const std::string keyword = keyword_of(segment);
        if (keyword == "endif") break;
        ++at_;
        ExprParser clause(tokenize(segment.text, segment.line, name_), name_);
        clause.expect_name();
        if (keyword == "elif") {
            node->exprs.push_back(clause.expression());
            clause.expect_end();
            node->bodies.push_back(parse_body(stops));
        } else {
            clause.expect_end();
            node->bodies.push_back(parse_body({"endif"}));
            break;
        }
    }
    close("endif", line);
    return node;
}

std::unique_ptr<Node> TemplateParser::parse_for(ExprParser& tokens, int line) {
    auto node = make(Node::Kind::For, line);
    node->targets.push_back(tokens.expect_name());
    while (tokens.is_op(",")) {
        tokens.next();
        node->targets.push_back(tokens.expect_name());
    }
    if (!tokens.is_name("in")) tokens.error("expected 'in'");
    tokens.next();
    node->exprs.push_back(tokens.expression(false));
    if (tokens.is_name("if")) {
        tokens.next();
        node->exprs.push_back(tokens.expression(false));
    }
    tokens.expect_end();
    node->bodies.push_back(parse_body({"else", "endfor"}));
    if (at_ < segments_.size() && keyword_of(segments_[at_]) == "else") {
        ++at_;
        node->bodies.push_back(parse_body({"endfor"}));
    } else {
        node->bodies.emplace_back();
    }
    close("endfor", line);
    return node;
}

std::unique_ptr<Node> TemplateParser::parse_set(ExprParser& tokens, int line) {
    std::string target = tokens.expect_name();
    std::string attribute;
    if (tokens.is_op(".")) {
        tokens.next();
        attribute = tokens.expect_name();
    }
    if (tokens.at_end() && attribute.empty()) {  // {% set x %}...{% endset %}
        auto node = make(Node::Kind::SetBlock, line);
        node->text = std::move(target);
        node->bodies.push_back(parse_body({"endset"}));
        close("endset", line);
        return node;
    }
    tokens.expect_op("=");
    auto node = make(Node::Kind::Set, line);
    node->text = std::move(target);
    node->attribute = std::move(attribute);
    node->exprs.push_back(tokens.expression());
    tokens.expect_end();
    return node;
}

std::unique_ptr<Node> TemplateParser::parse_macro(ExprParser& tokens, int line) {
    auto node = make(Node::Kind::Macro, line);
    node->text = tokens.expect_name();
    tokens.expect_op("(");
    while (!tokens.is_op(")")) {
        node->targets.push_back(tokens.expect_name());
        ExprPtr fallback;
        if (tokens.is_op("=")) {
            tokens.next();
            fallback = tokens.expression();
        }
        node->exprs.push_back(std::move(fallback));
        if (!tokens.is_op(",")) break;
        tokens.next();
    }
    tokens.expect_op(")");
    tokens.expect_end();
    node->bodies.push_back(parse_body({"endmacro"}));
    close("endmacro", line);
    return node;
}

}  // namespace

Body parse(std::string_view source, const std::string& name) {
    return TemplateParser(split_segments(source, name), name).parse_all();
}

}  // namespace vkllm::chat::jinja
