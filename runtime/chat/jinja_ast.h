#pragma once
// Syntax tree of the Jinja2 subset: expressions and statements, each with its source line so
// rendering errors can name it. Internal to vkllm_chat (jinja_parse.cpp builds, jinja_render.cpp runs).
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chat/jinja_value.h"

namespace vkllm::chat::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
    enum class Kind {
        Literal,   // value
        Name,      // name
        List,      // args
        Dict,      // args: key, value, key, value, ...
        Attr,      // args[0].name
        Item,      // args[0][args[1]]
        Slice,     // args[0][args[1]:args[2]:args[3]] (null parts absent)
        Call,      // args[0](args[1..], kwargs)
        Filter,    // args[0] | name(args[1..], kwargs)
        Test,      // args[0] is [not] name(args[1..])
        Unary,     // op args[0]: "not", "-", "+"
        Binary,    // args[0] op args[1]: arithmetic, comparisons, "and", "or", "in", "not in", "~"
        Ternary,   // args[0] if args[1] else args[2] (args[2] may be null)
    };
    Kind kind;
    int line = 0;
    std::string name;  // Name, Attr, Filter, Test; the operator of Unary / Binary
    bool negated = false;  // Test: "is not"
    Value value;           // Literal
    std::vector<ExprPtr> args;
    std::vector<std::pair<std::string, ExprPtr>> kwargs;
};

struct Node;
using Body = std::vector<std::unique_ptr<Node>>;

struct Node {
    enum class Kind { Text, Output, If, For, Set, SetBlock, Macro, Break, Continue };
    Kind kind;
    int line = 0;
    std::string text;                  // Text; SetBlock/Set target name; Macro name
    std::string attribute;             // Set: "ns.attr" target attribute ("" for a plain name)
    std::vector<std::string> targets;  // For: loop variables; Macro: parameter names
    std::vector<ExprPtr> exprs;        // Output: [expr]; If: conditions; For: [iterable, filter?];
                                       // Set: [value]; Macro: parameter defaults (null if none)
    std::vector<Body> bodies;          // If: one per condition, then else; For: [body, else]; SetBlock/Macro: [body]
};

// Parses a template with transformers' settings (trim_blocks, lstrip_blocks, the final newline
// dropped). Throws a vkllm::Error "NAME:LINE: ..." for any syntax error.
Body parse(std::string_view source, const std::string& name);

}  // namespace vkllm::chat::jinja
