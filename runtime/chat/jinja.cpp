#include "chat/jinja.h"

#include <cmath>
#include <ctime>
#include <unordered_map>

#include "chat/jinja_ast.h"
#include "chat/jinja_builtins.h"
#include "core/error.h"

namespace vkllm::chat {

using namespace jinja;

namespace {

// Bounds that keep a hostile or broken template from running away.
constexpr size_t max_steps = 5'000'000;
constexpr size_t max_output = 64u << 20;
constexpr int max_call_depth = 64;
constexpr size_t max_range = 1u << 20;

enum class Flow { Normal, Break, Continue };

class Renderer {
public:
    Renderer(const std::string& name, std::string_view today) : name_(name), today_(today) { scopes_.emplace_back(); }

    void define(const std::string& key, Value value) { scopes_.front()[key] = std::move(value); }
    void define_globals();
    std::string render(const Body& body) {
        std::string out;
        exec(body, out);
        return out;
    }

private:
    using Scope = std::unordered_map<std::string, Value>;

    Where at(int line) const { return Where{name_, line}; }
    void step(int line) {
        if (++steps_ > max_steps) at(line).fail(fmt::format("rendering exceeds {} steps", max_steps));
    }
    Value lookup(const std::string& key) const {
        for (auto scope = scopes_.rbegin(); scope != scopes_.rend(); ++scope)
            if (auto it = scope->find(key); it != scope->end()) return it->second;
        return Value::undefined(key);
    }

    Flow exec(const Body& body, std::string& out);
    Flow exec_for(const Node& node, std::string& out);
    void exec_set(const Node& node);
    Value make_macro(const Node& node);

    Value eval(const Expr& expr);
    Value eval_binary(const Expr& expr);
    Value arithmetic(const std::string& op, const Value& a, const Value& b, int line);
    CallArgs eval_args(const Expr& expr, size_t first);

    const std::string& name_;
    std::string today_;
    std::vector<Scope> scopes_;
    size_t steps_ = 0;
    int call_depth_ = 0;
};

Flow Renderer::exec(const Body& body, std::string& out) {
    for (const auto& node : body) {
        step(node->line);
        switch (node->kind) {
            case Node::Kind::Text: out += node->text; break;
            case Node::Kind::Output: out += eval(*node->exprs[0]).str(); break;
            case Node::Kind::If: {
                size_t branch = 0;
                while (branch < node->exprs.size() && !eval(*node->exprs[branch]).truthy()) ++branch;
                if (branch < node->bodies.size())
                    if (Flow flow = exec(node->bodies[branch], out); flow != Flow::Normal) return flow;
                break;
            }
            case Node::Kind::For:
                if (Flow flow = exec_for(*node, out); flow != Flow::Normal) return flow;
                break;
            case Node::Kind::Set: exec_set(*node); break;
            case Node::Kind::SetBlock: {
                std::string captured;
                exec(node->bodies[0], captured);
                scopes_.back()[node->text] = Value(std::move(captured));
                break;
            }
            case Node::Kind::Macro: scopes_.back()[node->text] = make_macro(*node); break;
            case Node::Kind::Break: return Flow::Break;
            case Node::Kind::Continue: return Flow::Continue;
        }
        if (out.size() > max_output) at(node->line).fail(fmt::format("output exceeds {} bytes", max_output));
    }
    return Flow::Normal;
}

Flow Renderer::exec_for(const Node& node, std::string& out) {
    const Where where = at(node.line);
    List items;
    scopes_.emplace_back();  // loop variables and assignments stay inside the loop (Jinja2 scoping)
    auto bind_targets = [&](const Value& item) {
        if (node.targets.size() == 1) {
            scopes_.back()[node.targets[0]] = item;
            return;
        }
        const List parts = iterate(item, where);
        if (parts.size() != node.targets.size())
            where.fail(fmt::format("cannot unpack {} values into {} loop variables", parts.size(), node.targets.size()));
        for (size_t i = 0; i < parts.size(); ++i) scopes_.back()[node.targets[i]] = parts[i];
    };
    for (const Value& item : iterate(eval(*node.exprs[0]), where)) {
        step(node.line);
        if (node.exprs.size() > 1) {
            bind_targets(item);
            if (!eval(*node.exprs[1]).truthy()) continue;
        }
        items.push_back(item);
    }
    const int64_t n = int64_t(items.size());
    for (int64_t i = 0; i < n; ++i) {
        step(node.line);
        Dict loop;
        loop.items = {{"index", Value(i + 1)},       {"index0", Value(i)},     {"revindex", Value(n - i)},
                      {"revindex0", Value(n - i - 1)}, {"first", Value(i == 0)}, {"last", Value(i == n - 1)},
                      {"length", Value(n)},
                      {"previtem", i > 0 ? items[size_t(i - 1)] : Value::undefined("previtem")},
                      {"nextitem", i + 1 < n ? items[size_t(i + 1)] : Value::undefined("nextitem")}};
        loop.items.emplace_back("cycle", Value(Function([i](CallArgs& args) {
            return args.positional.empty() ? Value() : args.positional[size_t(i) % args.positional.size()];
        })));
        scopes_.back()["loop"] = Value(std::move(loop));
        bind_targets(items[size_t(i)]);
        if (exec(node.bodies[0], out) == Flow::Break) break;
    }
    if (items.empty()) exec(node.bodies[1], out);
    scopes_.pop_back();
    return Flow::Normal;
}

void Renderer::exec_set(const Node& node) {
    Value value = eval(*node.exprs[0]);
    if (node.attribute.empty()) {
        scopes_.back()[node.text] = std::move(value);
        return;
    }
    const Value target = lookup(node.text);
    if (!target.is_dict() || !target.as_dict().is_namespace)
        at(node.line).fail(fmt::format("cannot assign attribute '{}' of '{}': only namespace() objects take attributes",
                                       node.attribute, node.text));
    target.as_dict().set(node.attribute, std::move(value));
}

Value Renderer::make_macro(const Node& node) {
    return Value(Function([this, &node](CallArgs& args) {
        if (++call_depth_ > max_call_depth) at(node.line).fail("macro calls nested too deeply");
        Scope scope;
        for (size_t i = 0; i < node.targets.size(); ++i) {
            Value value = args.get(i, node.targets[i]);
            if (value.is_undefined() && node.exprs[i]) value = eval(*node.exprs[i]);
            scope[node.targets[i]] = std::move(value);
        }
        scopes_.push_back(std::move(scope));
        std::string out;
        exec(node.bodies[0], out);
        scopes_.pop_back();
        --call_depth_;
        return Value(std::move(out));
    }));
}

CallArgs Renderer::eval_args(const Expr& expr, size_t first) {
    CallArgs args;
    args.line = expr.line;
    for (size_t i = first; i < expr.args.size(); ++i) args.positional.push_back(eval(*expr.args[i]));
    for (const auto& [key, value] : expr.kwargs) args.keyword.emplace_back(key, eval(*value));
    return args;
}

Value Renderer::eval(const Expr& expr) {
    step(expr.line);
    const Where where = at(expr.line);
    switch (expr.kind) {
        case Expr::Kind::Literal: return expr.value;
        case Expr::Kind::Name: return lookup(expr.name);
        case Expr::Kind::List: {
            List list;
            for (const auto& item : expr.args) list.push_back(eval(*item));
            return Value(std::move(list));
        }
        case Expr::Kind::Dict: {
            Dict dict;
            for (size_t i = 0; i + 1 < expr.args.size(); i += 2) {
                const Value key = eval(*expr.args[i]);
                if (!key.is_string()) where.fail("dict keys must be strings");
                dict.set(key.as_string(), eval(*expr.args[i + 1]));
            }
            return Value(std::move(dict));
        }
        case Expr::Kind::Attr: return get_attribute(eval(*expr.args[0]), expr.name, where);
        case Expr::Kind::Item: return get_item(eval(*expr.args[0]), eval(*expr.args[1]), where);
        case Expr::Kind::Slice: {
            auto part = [&](size_t i) { return expr.args[i] ? eval(*expr.args[i]) : Value(); };
            return get_slice(eval(*expr.args[0]), part(1), part(2), part(3), where);
        }
        case Expr::Kind::Call: {
            const Value callee = eval(*expr.args[0]);
            if (!callee.is_callable()) {
                const std::string what = expr.args[0]->kind == Expr::Kind::Name ? expr.args[0]->name : callee.type_name();
                where.fail(fmt::format("'{}' is not callable", what));
            }
            CallArgs args = eval_args(expr, 1);
            return callee.as_function()(args);
        }
        case Expr::Kind::Filter: {
            CallArgs args = eval_args(expr, 1);
            return apply_filter(expr.name, eval(*expr.args[0]), args, where);
        }
        case Expr::Kind::Test: {
            CallArgs args = eval_args(expr, 1);
            return Value(apply_test(expr.name, eval(*expr.args[0]), args, where) != expr.negated);
        }
        case Expr::Kind::Unary: {
            const Value operand = eval(*expr.args[0]);
            if (expr.name == "not") return Value(!operand.truthy());
            if (!operand.is_number()) where.fail(fmt::format("unary '{}' needs a number, got {}", expr.name, operand.type_name()));
            if (expr.name == "+") return operand;
            return operand.kind() == Value::Kind::Float ? Value(-operand.as_float()) : Value(-operand.as_int());
        }
        case Expr::Kind::Binary: return eval_binary(expr);
        case Expr::Kind::Ternary:
            if (eval(*expr.args[1]).truthy()) return eval(*expr.args[0]);
            return expr.args[2] ? eval(*expr.args[2]) : Value();
    }
    return Value();
}

Value Renderer::eval_binary(const Expr& expr) {
    const std::string& op = expr.name;
    const Where where = at(expr.line);
    const Value left = eval(*expr.args[0]);
    if (op == "and") return left.truthy() ? eval(*expr.args[1]) : left;
    if (op == "or") return left.truthy() ? left : eval(*expr.args[1]);
    const Value right = eval(*expr.args[1]);
    if (op == "==") return Value(left == right);
    if (op == "!=") return Value(!(left == right));
    if (op == "<") return Value(compare(left, right, where) < 0);
    if (op == ">") return Value(compare(left, right, where) > 0);
    if (op == "<=") return Value(compare(left, right, where) <= 0);
    if (op == ">=") return Value(compare(left, right, where) >= 0);
    if (op == "in") return Value(contains(right, left, where));
    if (op == "not in") return Value(!contains(right, left, where));
    if (op == "~") return Value(left.str() + right.str());
    return arithmetic(op, left, right, expr.line);
}

Value Renderer::arithmetic(const std::string& op, const Value& a, const Value& b, int line) {
    const Where where = at(line);
    if (op == "+") {
        if (a.is_string() && b.is_string()) return Value(a.as_string() + b.as_string());
        if (a.is_list() && b.is_list()) {
            List joined = a.as_list();
            joined.insert(joined.end(), b.as_list().begin(), b.as_list().end());
            return Value(std::move(joined));
        }
    }
    if (op == "*" && (a.is_string() || b.is_string()) && (a.kind() == Value::Kind::Int || b.kind() == Value::Kind::Int)) {
        const std::string& text = a.is_string() ? a.as_string() : b.as_string();
        const int64_t times = a.is_string() ? b.as_int() : a.as_int();
        if (times > 0 && text.size() * size_t(times) > max_output) where.fail("string repetition is too large");
        std::string out;
        for (int64_t i = 0; i < times; ++i) out += text;
        return Value(std::move(out));
    }
    if (!a.is_number() || !b.is_number())
        where.fail(fmt::format("unsupported operand types for {}: {} and {}", op, a.type_name(), b.type_name()));
    const bool floats = a.kind() == Value::Kind::Float || b.kind() == Value::Kind::Float;
    const double x = a.as_float(), y = b.as_float();
    const int64_t i = a.as_int(), j = b.as_int();
    if (op == "/") {
        if (y == 0) where.fail("division by zero");
        return Value(x / y);
    }
    if (op == "//" || op == "%") {
        if (y == 0) where.fail("integer division or modulo by zero");
        if (floats) {
            const double quotient = std::floor(x / y);
            return op == "//" ? Value(quotient) : Value(x - quotient * y);
        }
        int64_t quotient = i / j;
        if ((i % j != 0) && ((i < 0) != (j < 0))) --quotient;  // Python floors
        return op == "//" ? Value(quotient) : Value(i - quotient * j);
    }
    if (op == "**") return floats || j < 0 ? Value(std::pow(x, y)) : Value(int64_t(std::pow(x, y)));
    if (op == "+") return floats ? Value(x + y) : Value(i + j);
    if (op == "-") return floats ? Value(x - y) : Value(i - j);
    if (op == "*") return floats ? Value(x * y) : Value(i * j);
    where.fail(fmt::format("unknown operator '{}'", op));
}

// The globals transformers' chat environment provides.
void Renderer::define_globals() {
    const std::string& name = name_;
    define("raise_exception", Value(Function([&name](CallArgs& args) -> Value {
               fail("{}:{}: raise_exception: {}", name, args.line, args.get(0, "message").str());
           })));
    define("strftime_now", Value(Function([this](CallArgs& args) {
               std::tm when{};
               if (today_.empty()) {
                   const std::time_t now = std::time(nullptr);
                   localtime_r(&now, &when);
               } else if (std::sscanf(today_.c_str(), "%d-%d-%d", &when.tm_year, &when.tm_mon, &when.tm_mday) == 3) {
                   when.tm_year -= 1900;
                   when.tm_mon -= 1;
                   std::mktime(&when);  // fills the weekday and day of the year
               }
               char text[256];
               const size_t n = std::strftime(text, sizeof text, args.get(0, "format").str().c_str(), &when);
               return Value(std::string(text, n));
           })));
    define("range", Value(Function([&name](CallArgs& args) {
               int64_t start = 0, stop = 0, step = 1;
               if (args.positional.size() == 1) stop = args.positional[0].as_int();
               else if (args.positional.size() >= 2) start = args.positional[0].as_int(), stop = args.positional[1].as_int();
               if (args.positional.size() >= 3) step = args.positional[2].as_int();
               if (step == 0) fail("{}:{}: range() step must not be zero", name, args.line);
               List out;
               for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
                   if (out.size() >= max_range) fail("{}:{}: range() is longer than {} items", name, args.line, max_range);
                   out.emplace_back(i);
               }
               return Value(std::move(out));
           })));
    auto keyword_dict = [](bool is_namespace) {
        return Value(Function([is_namespace](CallArgs& args) {
            Dict dict;
            dict.is_namespace = is_namespace;
            for (auto& [key, value] : args.keyword) dict.set(key, value);
            return Value(std::move(dict));
        }));
    };
    define("namespace", keyword_dict(true));
    define("dict", keyword_dict(false));
}

}  // namespace

struct JinjaTemplate::Impl {
    std::string name;
    Body body;
};

JinjaTemplate::JinjaTemplate(std::string_view source, std::string name) : impl_(std::make_unique<Impl>()) {
    impl_->name = std::move(name);
    impl_->body = parse(source, impl_->name);
}

JinjaTemplate::~JinjaTemplate() = default;
JinjaTemplate::JinjaTemplate(JinjaTemplate&&) noexcept = default;
JinjaTemplate& JinjaTemplate::operator=(JinjaTemplate&&) noexcept = default;

std::string JinjaTemplate::render(const nlohmann::ordered_json& variables, std::string_view today) const {
    Renderer renderer(impl_->name, today);
    renderer.define_globals();
    if (variables.is_object())
        for (const auto& [key, value] : variables.items()) renderer.define(key, Value::from_json(value));
    return renderer.render(impl_->body);
}

}  // namespace vkllm::chat
