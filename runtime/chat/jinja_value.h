#pragma once
// Values of the Jinja2 subset (jinja.h): Python-like objects with Python's truthiness, equality,
// str() and repr(), so rendered text matches what transformers' Jinja2 environment prints.
// Lists and dicts are shared by reference as in Python; dicts keep insertion order.
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vkllm::chat::jinja {

class Value;
using List = std::vector<Value>;

struct Dict {
    std::vector<std::pair<std::string, Value>> items;
    bool is_namespace = false;  // namespace(): the one object templates may assign attributes to

    const Value* find(std::string_view key) const;
    void set(std::string_view key, Value value);
};

struct CallArgs;
using Function = std::function<Value(CallArgs&)>;

class Value {
public:
    enum class Kind { Undefined, None, Bool, Int, Float, String, List, Dict, Function };

    Value() = default;  // undefined
    static Value undefined(std::string name) {
        Value v;
        v.string_ = std::move(name);
        return v;
    }
    static Value none() { return Value(Kind::None); }
    Value(bool b) : kind_(Kind::Bool), int_(b) {}
    Value(int64_t i) : kind_(Kind::Int), int_(i) {}
    Value(int i) : Value(int64_t(i)) {}
    Value(double f) : kind_(Kind::Float), float_(f) {}
    Value(std::string s) : kind_(Kind::String), string_(std::move(s)) {}
    Value(std::string_view s) : Value(std::string(s)) {}
    Value(const char* s) : Value(std::string(s)) {}
    Value(List list) : kind_(Kind::List), list_(std::make_shared<List>(std::move(list))) {}
    Value(Dict dict) : kind_(Kind::Dict), dict_(std::make_shared<Dict>(std::move(dict))) {}
    Value(Function function) : kind_(Kind::Function), function_(std::make_shared<Function>(std::move(function))) {}

    static Value from_json(const nlohmann::ordered_json& json);

    Kind kind() const { return kind_; }
    bool is_undefined() const { return kind_ == Kind::Undefined; }
    bool is_none() const { return kind_ == Kind::None; }
    bool is_string() const { return kind_ == Kind::String; }
    bool is_number() const { return kind_ == Kind::Int || kind_ == Kind::Float || kind_ == Kind::Bool; }
    bool is_list() const { return kind_ == Kind::List; }
    bool is_dict() const { return kind_ == Kind::Dict; }
    bool is_callable() const { return kind_ == Kind::Function; }

    bool as_bool() const { return int_ != 0; }
    int64_t as_int() const { return kind_ == Kind::Float ? int64_t(float_) : int_; }
    double as_float() const { return kind_ == Kind::Float ? float_ : double(int_); }
    const std::string& as_string() const { return string_; }  // also an undefined value's name
    List& as_list() const { return *list_; }
    Dict& as_dict() const { return *dict_; }
    const Function& as_function() const { return *function_; }

    bool truthy() const;
    std::string str() const;   // Python str(); "" for undefined
    std::string repr() const;  // Python repr(), as list and dict printing uses it
    std::string type_name() const;
    bool same_object(const Value& other) const;

private:
    explicit Value(Kind kind) : kind_(kind) {}

    Kind kind_ = Kind::Undefined;
    int64_t int_ = 0;
    double float_ = 0;
    std::string string_;
    std::shared_ptr<List> list_;
    std::shared_ptr<Dict> dict_;
    std::shared_ptr<Function> function_;
};

bool operator==(const Value& a, const Value& b);  // Python ==: 1 == 1.0 == True, by content
std::string python_float(double value);             // Python repr of a float: "1.0", "1e-05"
std::string to_json(const Value& value, int indent = -1);  // json.dumps(ensure_ascii=False)

// Arguments of a call: positional ones, then keyword ones.
struct CallArgs {
    std::vector<Value> positional;
    std::vector<std::pair<std::string, Value>> keyword;
    int line = 0;

    // The argument by position, else by keyword, else `fallback`.
    Value get(size_t index, std::string_view name, Value fallback = Value()) const;
};

}  // namespace vkllm::chat::jinja
