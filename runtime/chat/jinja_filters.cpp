// Jinja2's filters and tests, as far as chat templates use them.
#include <algorithm>
#include <cmath>

#include "chat/jinja_builtins.h"
#include "core/error.h"

namespace vkllm::chat::jinja {

namespace {

using Filter = Value (*)(const Value&, CallArgs&, const Where&);
using Test = bool (*)(const Value&, CallArgs&, const Where&);

std::string text_of(const Value& value, const Where& where, const char* filter) {
    if (value.is_undefined()) return "";
    if (!value.is_string()) where.fail(fmt::format("filter '{}' needs a string, got {}", filter, value.type_name()));
    return value.as_string();
}

// The attribute path of selectattr/map/sort/join: "a.b" or an integer index.
Value attribute_path(const Value& item, const Value& path, const Where& where) {
    if (!path.is_string()) return get_item(item, path, where);
    Value value = item;
    const std::string& text = path.as_string();
    for (size_t at = 0; at <= text.size();) {
        const size_t dot = std::min(text.find('.', at), text.size());
        value = get_item(value, Value(text.substr(at, dot - at)), where);
        if (value.is_undefined()) return value;
        at = dot + 1;
    }
    return value;
}

// selectattr / rejectattr / select / reject: keep items whose test result equals `keep`.
Value select_items(const Value& input, CallArgs& args, const Where& where, bool by_attribute, bool keep) {
    List out;
    const size_t first_test_arg = by_attribute ? 1 : 0;
    const Value test = args.get(first_test_arg, "");
    CallArgs test_args;
    test_args.line = args.line;
    for (size_t i = first_test_arg + 1; i < args.positional.size(); ++i) test_args.positional.push_back(args.positional[i]);
    for (const Value& item : iterate(input, where)) {
        const Value subject = by_attribute ? attribute_path(item, args.get(0, "attribute"), where) : item;
        const bool passed = test.is_string() ? apply_test(test.as_string(), subject, test_args, where) : subject.truthy();
        if (passed == keep) out.push_back(item);
    }
    return Value(std::move(out));
}

Value map_items(const Value& input, CallArgs& args, const Where& where) {
    List out;
    const Value attribute = args.get(1000, "attribute");
    if (!attribute.is_undefined()) {
        const Value fallback = args.get(1000, "default");
        for (const Value& item : iterate(input, where)) {
            Value value = attribute_path(item, attribute, where);
            out.push_back(value.is_undefined() && !fallback.is_undefined() ? fallback : value);
        }
        return Value(std::move(out));
    }
    const Value filter = args.get(0, "");
    if (!filter.is_string()) where.fail("map needs a filter name or attribute=");
    CallArgs filter_args;
    filter_args.line = args.line;
    filter_args.positional.assign(args.positional.begin() + 1, args.positional.end());
    for (const Value& item : iterate(input, where)) out.push_back(apply_filter(filter.as_string(), item, filter_args, where));
    return Value(std::move(out));
}

Value sorted(const Value& input, CallArgs& args, const Where& where) {
    List items = iterate(input, where);
    const Value attribute = args.get(2, "attribute");
    auto key = [&](const Value& item) { return attribute.is_undefined() ? item : attribute_path(item, attribute, where); };
    std::stable_sort(items.begin(), items.end(),
                     [&](const Value& a, const Value& b) { return compare(key(a), key(b), where) < 0; });
    if (args.get(0, "reverse").truthy()) std::reverse(items.begin(), items.end());
    return Value(std::move(items));
}

Value join(const Value& input, CallArgs& args, const Where& where) {
    const Value separator = args.get(0, "d", Value(""));
    const Value attribute = args.get(1, "attribute");
    std::string out;
    bool first = true;
    for (const Value& item : iterate(input, where)) {
        if (!first) out += separator.str();
        out += (attribute.is_undefined() ? item : attribute_path(item, attribute, where)).str();
        first = false;
    }
    return Value(std::move(out));
}

Value indent(const Value& input, CallArgs& args, const Where& where) {
    const Value width = args.get(0, "width", Value(4));
    const std::string pad = width.is_string() ? width.as_string() : std::string(size_t(std::max<int64_t>(0, width.as_int())), ' ');
    const bool first = args.get(1, "first").truthy(), blank = args.get(2, "blank").truthy();
    const std::string text = text_of(input, where, "indent");
    std::string out;
    size_t at = 0;
    for (bool is_first = true; at <= text.size(); is_first = false) {
        const size_t end = std::min(text.find('\n', at), text.size());
        const std::string_view line = std::string_view(text).substr(at, end - at);
        if ((is_first ? first : true) && (blank || !line.empty())) out += pad;
        out += line;
        if (end == text.size()) break;
        out += '\n';
        at = end + 1;
    }
    return Value(std::move(out));
}

Value extreme(const Value& input, const Where& where, bool want_max) {
    const List items = iterate(input, where);
    if (items.empty()) return Value();
    Value best = items[0];
    for (const Value& item : items)
        if ((compare(item, best, where) > 0) == want_max && !(item == best)) best = item;
    return best;
}

Value html_escape(const Value& input, const Where&) {
    std::string out;
    for (char c : input.str()) {
        switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&#34;"; break;
            case '\'': out += "&#39;"; break;
            default: out += c;
        }
    }
    return Value(std::move(out));
}

const std::vector<std::pair<std::string_view, Filter>>& filters() {
    static const std::vector<std::pair<std::string_view, Filter>> table = {
        {"trim", [](const Value& v, CallArgs& a, const Where& w) {
             const std::string text = text_of(v, w, "trim");
             return Value(string_strip(text, a.get(0, "chars")));
         }},
        {"tojson", [](const Value& v, CallArgs& a, const Where& w) {
             const Value spaces = a.get(0, "indent");
             try {
                 return Value(to_json(v, spaces.is_number() ? int(spaces.as_int()) : -1));
             } catch (const Error& error) {
                 w.fail(error.what());
             }
         }},
        {"string", [](const Value& v, CallArgs&, const Where&) { return Value(v.str()); }},
        {"length", [](const Value& v, CallArgs&, const Where& w) { return Value(int64_t(length(v, w))); }},
        {"count", [](const Value& v, CallArgs&, const Where& w) { return Value(int64_t(length(v, w))); }},
        {"list", [](const Value& v, CallArgs&, const Where& w) { return Value(iterate(v, w)); }},
        {"selectattr", [](const Value& v, CallArgs& a, const Where& w) { return select_items(v, a, w, true, true); }},
        {"rejectattr", [](const Value& v, CallArgs& a, const Where& w) { return select_items(v, a, w, true, false); }},
        {"select", [](const Value& v, CallArgs& a, const Where& w) { return select_items(v, a, w, false, true); }},
        {"reject", [](const Value& v, CallArgs& a, const Where& w) { return select_items(v, a, w, false, false); }},
        {"map", map_items},
        {"join", join},
        {"sort", sorted},
        {"indent", indent},
        {"upper", [](const Value& v, CallArgs& a, const Where& w) { return call_string_method(v, "upper", a, w); }},
        {"lower", [](const Value& v, CallArgs& a, const Where& w) { return call_string_method(v, "lower", a, w); }},
        {"capitalize", [](const Value& v, CallArgs& a, const Where& w) { return call_string_method(v, "capitalize", a, w); }},
        {"title", [](const Value& v, CallArgs& a, const Where& w) { return call_string_method(v, "title", a, w); }},
        {"replace", [](const Value& v, CallArgs& a, const Where& w) { return call_string_method(v, "replace", a, w); }},
        {"default", [](const Value& v, CallArgs& a, const Where&) {
             const bool use_default = v.is_undefined() || (a.get(1, "boolean").truthy() && !v.truthy());
             return use_default ? a.get(0, "default_value", Value("")) : v;
         }},
        {"first", [](const Value& v, CallArgs&, const Where& w) {
             const List items = iterate(v, w);
             return items.empty() ? Value() : items.front();
         }},
        {"last", [](const Value& v, CallArgs&, const Where& w) {
             const List items = iterate(v, w);
             return items.empty() ? Value() : items.back();
         }},
        {"reverse", [](const Value& v, CallArgs&, const Where& w) {
             List items = iterate(v, w);
             std::reverse(items.begin(), items.end());
             if (v.is_string()) {
                 std::string text;
                 for (const Value& c : items) text += c.as_string();
                 return Value(std::move(text));
             }
             return Value(std::move(items));
         }},
        {"unique", [](const Value& v, CallArgs&, const Where& w) {
             List out;
             for (const Value& item : iterate(v, w))
                 if (std::find(out.begin(), out.end(), item) == out.end()) out.push_back(item);
             return Value(std::move(out));
         }},
        {"items", [](const Value& v, CallArgs&, const Where& w) {
             if (v.is_undefined()) return Value(List{});
             if (!v.is_dict()) w.fail("filter 'items' needs a mapping");
             List out;
             for (const auto& [key, value] : v.as_dict().items) out.emplace_back(List{Value(key), value});
             return Value(std::move(out));
         }},
        {"sum", [](const Value& v, CallArgs& a, const Where& w) {
             Value total = a.get(1, "start", Value(0));
             for (const Value& item : iterate(v, w)) {
                 if (!item.is_number() || !total.is_number()) w.fail("filter 'sum' needs numbers");
                 total = item.kind() == Value::Kind::Float || total.kind() == Value::Kind::Float
                             ? Value(total.as_float() + item.as_float())
                             : Value(total.as_int() + item.as_int());
             }
             return total;
         }},
        {"min", [](const Value& v, CallArgs&, const Where& w) { return extreme(v, w, false); }},
        {"max", [](const Value& v, CallArgs&, const Where& w) { return extreme(v, w, true); }},
        {"int", [](const Value& v, CallArgs& a, const Where&) {
             if (v.is_number()) return Value(v.as_int());
             if (v.is_string()) {
                 try {
                     return Value(int64_t(std::stoll(v.as_string())));
                 } catch (const std::exception&) {
                 }
             }
             return a.get(0, "default", Value(0));
         }},
        {"float", [](const Value& v, CallArgs& a, const Where&) {
             if (v.is_number()) return Value(v.as_float());
             if (v.is_string()) {
                 try {
                     return Value(std::stod(v.as_string()));
                 } catch (const std::exception&) {
                 }
             }
             return a.get(0, "default", Value(0.0));
         }},
        {"abs", [](const Value& v, CallArgs&, const Where& w) {
             if (!v.is_number()) w.fail("filter 'abs' needs a number");
             return v.kind() == Value::Kind::Float ? Value(std::fabs(v.as_float())) : Value(int64_t(std::llabs(v.as_int())));
         }},
        {"round", [](const Value& v, CallArgs& a, const Where& w) {
             if (!v.is_number()) w.fail("filter 'round' needs a number");
             const double scale = std::pow(10.0, double(a.get(0, "precision", Value(0)).as_int()));
             return Value(std::round(v.as_float() * scale) / scale);
         }},
        {"attr", [](const Value& v, CallArgs& a, const Where& w) { return get_attribute(v, a.get(0, "name").str(), w); }},
        {"safe", [](const Value& v, CallArgs&, const Where&) { return v; }},
        {"escape", [](const Value& v, CallArgs&, const Where& w) { return html_escape(v, w); }},
        {"e", [](const Value& v, CallArgs&, const Where& w) { return html_escape(v, w); }},
    };
    return table;
}

bool type_is(const Value& v, Value::Kind kind) { return v.kind() == kind; }

const std::vector<std::pair<std::string_view, Test>>& tests() {
    static const std::vector<std::pair<std::string_view, Test>> table = {
        {"defined", [](const Value& v, CallArgs&, const Where&) { return !v.is_undefined(); }},
        {"undefined", [](const Value& v, CallArgs&, const Where&) { return v.is_undefined(); }},
        {"none", [](const Value& v, CallArgs&, const Where&) { return v.is_none(); }},
        {"boolean", [](const Value& v, CallArgs&, const Where&) { return type_is(v, Value::Kind::Bool); }},
        {"true", [](const Value& v, CallArgs&, const Where&) { return type_is(v, Value::Kind::Bool) && v.as_bool(); }},
        {"false", [](const Value& v, CallArgs&, const Where&) { return type_is(v, Value::Kind::Bool) && !v.as_bool(); }},
        {"integer", [](const Value& v, CallArgs&, const Where&) { return type_is(v, Value::Kind::Int); }},
        {"float", [](const Value& v, CallArgs&, const Where&) { return type_is(v, Value::Kind::Float); }},
        {"number", [](const Value& v, CallArgs&, const Where&) { return v.is_number(); }},
        {"string", [](const Value& v, CallArgs&, const Where&) { return v.is_string(); }},
        {"mapping", [](const Value& v, CallArgs&, const Where&) { return v.is_dict(); }},
        {"iterable", [](const Value& v, CallArgs&, const Where&) { return v.is_list() || v.is_dict() || v.is_string() || v.is_undefined(); }},
        {"sequence", [](const Value& v, CallArgs&, const Where&) { return v.is_list() || v.is_dict() || v.is_string(); }},
        {"callable", [](const Value& v, CallArgs&, const Where&) { return v.is_callable(); }},
        {"odd", [](const Value& v, CallArgs&, const Where&) { return v.is_number() && v.as_int() % 2 != 0; }},
        {"even", [](const Value& v, CallArgs&, const Where&) { return v.is_number() && v.as_int() % 2 == 0; }},
        {"divisibleby", [](const Value& v, CallArgs& a, const Where& w) {
             const int64_t divisor = a.get(0, "num").as_int();
             if (divisor == 0) w.fail("divisibleby 0");
             return v.as_int() % divisor == 0;
         }},
        {"eq", [](const Value& v, CallArgs& a, const Where&) { return v == a.get(0, "other"); }},
        {"ne", [](const Value& v, CallArgs& a, const Where&) { return !(v == a.get(0, "other")); }},
        {"lt", [](const Value& v, CallArgs& a, const Where& w) { return compare(v, a.get(0, "other"), w) < 0; }},
        {"le", [](const Value& v, CallArgs& a, const Where& w) { return compare(v, a.get(0, "other"), w) <= 0; }},
        {"gt", [](const Value& v, CallArgs& a, const Where& w) { return compare(v, a.get(0, "other"), w) > 0; }},
        {"ge", [](const Value& v, CallArgs& a, const Where& w) { return compare(v, a.get(0, "other"), w) >= 0; }},
        {"in", [](const Value& v, CallArgs& a, const Where& w) { return contains(a.get(0, "seq"), v, w); }},
        {"sameas", [](const Value& v, CallArgs& a, const Where&) { return v.same_object(a.get(0, "other")); }},
        {"lower", [](const Value& v, CallArgs&, const Where&) {
             return v.is_string() && std::none_of(v.as_string().begin(), v.as_string().end(), [](char c) { return std::isupper(uint8_t(c)); });
         }},
        {"upper", [](const Value& v, CallArgs&, const Where&) {
             return v.is_string() && std::none_of(v.as_string().begin(), v.as_string().end(), [](char c) { return std::islower(uint8_t(c)); });
         }},
    };
    return table;
}

// Jinja2's aliases of the comparison tests.
std::string_view canonical_test(std::string_view name) {
    if (name == "equalto" || name == "==") return "eq";
    if (name == "!=") return "ne";
    if (name == "lessthan" || name == "<") return "lt";
    if (name == "<=") return "le";
    if (name == "greaterthan" || name == ">") return "gt";
    if (name == ">=") return "ge";
    return name;
}

}  // namespace

Value apply_filter(const std::string& filter, const Value& input, CallArgs& args, const Where& where) {
    const std::string_view name = filter == "d" ? std::string_view("default") : std::string_view(filter);
    for (const auto& [candidate, function] : filters())
        if (candidate == name) return function(input, args, where);
    where.fail(fmt::format("unknown filter '{}'", filter));
}

bool apply_test(const std::string& test, const Value& input, CallArgs& args, const Where& where) {
    const std::string_view name = canonical_test(test);
    for (const auto& [candidate, function] : tests())
        if (candidate == name) return function(input, args, where);
    where.fail(fmt::format("unknown test '{}'", test));
}

}  // namespace vkllm::chat::jinja
