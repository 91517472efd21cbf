#include "chat/jinja_value.h"

#include <charconv>
#include <cmath>

#include "core/error.h"

namespace vkllm::chat::jinja {

const Value* Dict::find(std::string_view key) const {
    for (const auto& [name, value] : items)
        if (name == key) return &value;
    return nullptr;
}

void Dict::set(std::string_view key, Value value) {
    for (auto& [name, existing] : items) {
        if (name == key) {
            existing = std::move(value);
            return;
        }
    }
    items.emplace_back(std::string(key), std::move(value));
}

Value Value::from_json(const nlohmann::ordered_json& json) {
    switch (json.type()) {
        case nlohmann::ordered_json::value_t::null: return none();
        case nlohmann::ordered_json::value_t::boolean: return Value(json.get<bool>());
        case nlohmann::ordered_json::value_t::number_integer: return Value(json.get<int64_t>());
        case nlohmann::ordered_json::value_t::number_unsigned: return Value(int64_t(json.get<uint64_t>()));
        case nlohmann::ordered_json::value_t::number_float: return Value(json.get<double>());
        case nlohmann::ordered_json::value_t::string: return Value(json.get<std::string>());
        case nlohmann::ordered_json::value_t::array: {
            List list;
            for (const auto& item : json) list.push_back(from_json(item));
            return Value(std::move(list));
        }
        case nlohmann::ordered_json::value_t::object: {
            Dict dict;
            for (const auto& [key, item] : json.items()) dict.items.emplace_back(key, from_json(item));
            return Value(std::move(dict));
        }
        default: return none();
    }
}

bool Value::truthy() const {
    switch (kind_) {
        case Kind::Undefined: case Kind::None: return false;
        case Kind::Bool: case Kind::Int: return int_ != 0;
        case Kind::Float: return float_ != 0;
        case Kind::String: return !string_.empty();
        case Kind::List: return !list_->empty();
        case Kind::Dict: return !dict_->items.empty();
        case Kind::Function: return true;
    }
    return false;
}

std::string python_float(double value) {
    if (std::isnan(value)) return "nan";
    if (std::isinf(value)) return value < 0 ? "-inf" : "inf";
    char digits[32];
    auto [end, error] = std::to_chars(digits, digits + sizeof digits, value, std::chars_format::scientific);
    std::string scientific(digits, end);  // shortest round-trip digits: "d.ddde+XX"
    const size_t e = scientific.find('e');
    const int exponent = std::stoi(scientific.substr(e + 1));
    std::string mantissa = scientific.substr(0, e);
    const bool negative = mantissa[0] == '-';
    if (negative) mantissa.erase(0, 1);
    std::string significant;
    for (char c : mantissa)
        if (c != '.') significant += c;
    std::string out = negative ? "-" : "";
    if (exponent < -4 || exponent >= 16) {  // repr switches to exponent notation here
        out += significant.substr(0, 1);
        if (significant.size() > 1) out.append(".").append(significant, 1);
        out += fmt::format("e{}{:02d}", exponent < 0 ? '-' : '+', std::abs(exponent));
        return out;
    }
    if (exponent < 0) return out.append("0.").append(size_t(-exponent - 1), '0').append(significant);
    if (significant.size() <= size_t(exponent) + 1) {
        significant.append(size_t(exponent) + 1 - significant.size(), '0');
        return out + significant + ".0";
    }
    return out + significant.substr(0, size_t(exponent) + 1) + "." + significant.substr(size_t(exponent) + 1);
}

namespace {

std::string python_string_repr(const std::string& s) {
    const bool use_double = s.find('\'') != std::string::npos && s.find('"') == std::string::npos;
    const char quote = use_double ? '"' : '\'';
    std::string out(1, quote);
    for (char c : s) {
        switch (c) {
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            default:
                if (c == quote) out.append(1, '\\').append(1, c);
                else if (uint8_t(c) < 0x20 || c == 0x7F) out += fmt::format("\\x{:02x}", uint8_t(c));
                else out += c;
        }
    }
    return out + quote;
}

}  // namespace

std::string Value::str() const {
    switch (kind_) {
        case Kind::Undefined: return "";
        case Kind::String: return string_;
        default: return repr();
    }
}

std::string Value::repr() const {
    switch (kind_) {
        case Kind::Undefined: return "";
        case Kind::None: return "None";
        case Kind::Bool: return int_ ? "True" : "False";
        case Kind::Int: return std::to_string(int_);
        case Kind::Float: return python_float(float_);
        case Kind::String: return python_string_repr(string_);
        case Kind::List: {
            std::string out = "[";
            for (size_t i = 0; i < list_->size(); ++i) out.append(i ? ", " : "").append((*list_)[i].repr());
            return out + "]";
        }
        case Kind::Dict: {
            std::string out = "{";
            for (size_t i = 0; i < dict_->items.size(); ++i)
                out.append(i ? ", " : "")
                    .append(python_string_repr(dict_->items[i].first))
                    .append(": ")
                    .append(dict_->items[i].second.repr());
            return out + "}";
        }
        case Kind::Function: return "<function>";
    }
    return "";
}

std::string Value::type_name() const {
    switch (kind_) {
        case Kind::Undefined: return "undefined";
        case Kind::None: return "none";
        case Kind::Bool: return "bool";
        case Kind::Int: return "int";
        case Kind::Float: return "float";
        case Kind::String: return "string";
        case Kind::List: return "list";
        case Kind::Dict: return "dict";
        case Kind::Function: return "function";
    }
    return "";
}

bool Value::same_object(const Value& other) const {
    if (kind_ != other.kind_) return false;
    if (kind_ == Kind::List) return list_ == other.list_;
    if (kind_ == Kind::Dict) return dict_ == other.dict_;
    return *this == other;
}

bool operator==(const Value& a, const Value& b) {
    if (a.is_number() && b.is_number()) {
        if (a.kind() == Value::Kind::Float || b.kind() == Value::Kind::Float) return a.as_float() == b.as_float();
        return a.as_int() == b.as_int();
    }
    if (a.kind() != b.kind()) return false;
    switch (a.kind()) {
        case Value::Kind::Undefined: case Value::Kind::None: return true;
        case Value::Kind::String: return a.as_string() == b.as_string();
        case Value::Kind::List: return a.as_list() == b.as_list();
        case Value::Kind::Dict: {
            const Dict& x = a.as_dict();
            const Dict& y = b.as_dict();
            if (x.items.size() != y.items.size()) return false;
            for (const auto& [key, value] : x.items) {
                const Value* other = y.find(key);
                if (!other || !(*other == value)) return false;
            }
            return true;
        }
        default: return a.same_object(b);
    }
}

namespace {

std::string json_string(const std::string& s) {
    std::string out = "\"";
    for (char c : s) {
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            case '\b': out += "\\b"; break;
            case '\f': out += "\\f"; break;
            default:
                if (uint8_t(c) < 0x20) out += fmt::format("\\u{:04x}", uint8_t(c));
                else out += c;
        }
    }
    return out + "\"";
}

void append_json(std::string& out, const Value& value, int indent, int depth) {
    auto newline = [&](int level) {
        if (indent >= 0) out.append("\n").append(size_t(indent * level), ' ');
    };
    const char* item_separator = indent >= 0 ? "," : ", ";
    switch (value.kind()) {
        case Value::Kind::String: out += json_string(value.as_string()); return;
        case Value::Kind::Bool: out += value.as_bool() ? "true" : "false"; return;
        case Value::Kind::Int: out += std::to_string(value.as_int()); return;
        case Value::Kind::Float: {
            const double f = value.as_float();
            out += std::isnan(f) ? "NaN" : std::isinf(f) ? (f < 0 ? "-Infinity" : "Infinity") : python_float(f);
            return;
        }
        case Value::Kind::List: {
            const List& list = value.as_list();
            if (list.empty()) {
                out += "[]";
                return;
            }
            out += "[";
            for (size_t i = 0; i < list.size(); ++i) {
                if (i) out += item_separator;
                newline(depth + 1);
                append_json(out, list[i], indent, depth + 1);
            }
            newline(depth);
            out += "]";
            return;
        }
        case Value::Kind::Dict: {
            const Dict& dict = value.as_dict();
            if (dict.items.empty()) {
                out += "{}";
                return;
            }
            out += "{";
            for (size_t i = 0; i < dict.items.size(); ++i) {
                if (i) out += item_separator;
                newline(depth + 1);
                out += json_string(dict.items[i].first) + ": ";
                append_json(out, dict.items[i].second, indent, depth + 1);
            }
            newline(depth);
            out += "}";
            return;
        }
        case Value::Kind::None: out += "null"; return;
        default: fail("tojson: a {} value has no JSON form", value.type_name());
    }
}

}  // namespace

std::string to_json(const Value& value, int indent) {
    std::string out;
    append_json(out, value, indent, 0);
    return out;
}

Value CallArgs::get(size_t index, std::string_view name, Value fallback) const {
    if (index < positional.size()) return positional[index];
    for (const auto& [key, value] : keyword)
        if (key == name) return value;
    return fallback;
}

}  // namespace vkllm::chat::jinja
