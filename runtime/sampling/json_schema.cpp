#include "sampling/json_schema.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "core/error.h"
#include "core/json.h"
#include "sampling/gbnf_text.h"
#include "sampling/schema_pattern.h"

namespace vkllm::sampling {
namespace {

using json = nlohmann::ordered_json;

constexpr int max_schema_depth = 64;
constexpr uint64_t unbounded = UINT64_MAX;
constexpr int64_t max_unbounded_digits = 16;  // as the integral-part rule: generation cannot run on forever

// llama.cpp's rules (json-schema-to-grammar's PRIMITIVE_RULES and STRING_FORMAT_RULES), with the
// rules each one uses.
struct Primitive {
    std::string_view name, body;
    std::vector<std::string_view> uses;
};
const Primitive primitives[] = {
    {"space", R"(| " " | "\n"{1,2} [ \t]{0,20})", {}},
    {"boolean", R"(("true" | "false") space)", {"space"}},
    {"null", R"("null" space)", {"space"}},
    {"decimal-part", "[0-9]{1,16}", {}},
    {"integral-part", "[0] | [1-9] [0-9]{0,15}", {}},
    // llama.cpp's exponent is an integral-part; two digits keep every number within a double, which
    // JSON parsers (JavaScript's among them) would otherwise make infinite or refuse.
    {"number", R"(("-"? integral-part) ("." decimal-part)? ([eE] [-+]? [0-9]{1,2})? space)", {"integral-part", "decimal-part", "space"}},
    {"integer", R"(("-"? integral-part) space)", {"integral-part", "space"}},
    {"char", R"([^"\\\x7F\x00-\x1F] | [\\] (["\\bfnrt] | "u" [0-9a-fA-F]{4}))", {}},
    {"string", R"("\"" char* "\"" space)", {"char", "space"}},
    {"value", "object | array | string | number | boolean | null", {"object", "array", "string", "number", "boolean", "null"}},
    {"object", R"("{" space ( string ":" space value ("," space string ":" space value)* )? "}" space)", {"string", "value", "space"}},
    {"array", R"("[" space ( value ("," space value)* )? "]" space)", {"value", "space"}},
    {"uuid", R"("\"" [0-9a-fA-F]{8} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{12} "\"" space)", {"space"}},
    {"date", R"([0-9]{4} "-" ( "0" [1-9] | "1" [0-2] ) "-" ( "0" [1-9] | [1-2] [0-9] | "3" [0-1] ))", {}},
    {"time", R"(([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9] ":" [0-5] [0-9] ( "." [0-9]{3} )? ( "Z" | ( "+" | "-" ) ( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] ))", {}},
    {"date-time", R"(date "T" time)", {"date", "time"}},
    {"date-string", R"("\"" date "\"" space)", {"date", "space"}},
    {"time-string", R"("\"" time "\"" space)", {"time", "space"}},
    {"date-time-string", R"("\"" date-time "\"" space)", {"date-time", "space"}},
};

const Primitive* find_primitive(std::string_view name) {
    for (const Primitive& primitive : primitives)
        if (primitive.name == name) return &primitive;
    return nullptr;
}

// Keywords that constrain values in ways the grammar does not express.
const std::unordered_set<std::string_view> unsupported_keywords = {
    "not", "allOf", "if", "then", "else", "contains", "minContains", "maxContains", "multipleOf", "patternProperties",
    "propertyNames", "dependentRequired", "dependentSchemas", "dependencies", "minProperties", "maxProperties",
    "unevaluatedProperties", "unevaluatedItems", "$dynamicRef", "$recursiveRef", "contentSchema"};
// Keywords that describe a schema without constraining it.
const std::unordered_set<std::string_view> annotation_keywords = {
    "$schema", "$id", "$anchor", "$comment", "$defs", "definitions", "title", "description", "default", "examples",
    "deprecated", "readOnly", "writeOnly", "contentMediaType", "contentEncoding", "$vocabulary"};

std::string pointer_token(std::string_view key) {
    std::string out;
    for (char c : key) out += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
    return out;
}

std::string sanitized(std::string_view name) {
    std::string out;
    for (char c : name) {
        const bool word = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        if (word) out += c;
        else if (out.empty() || out.back() != '-') out += '-';
    }
    return out.empty() ? "x" : out;
}

std::string type_name(const json& value) {
    return value.is_number_integer() ? "an integer" : value.is_number() ? "a number" : value.is_string() ? "a string"
         : value.is_boolean() ? "a boolean" : value.is_array() ? "an array" : value.is_object() ? "an object" : "null";
}

// GBNF for the decimal digits of the whole numbers in [low, high] that have as many digits as both.
std::string same_length_range(const std::string& low, const std::string& high) {
    if (low == high) return gbnf_literal(low);
    if (low.size() == 1) return gbnf_class({{uint32_t(low[0]), uint32_t(high[0])}});
    const std::string low_rest = low.substr(1), high_rest = high.substr(1);
    if (low[0] == high[0]) return gbnf_literal(low.substr(0, 1)) + " (" + same_length_range(low_rest, high_rest) + ")";
    const std::string zeros(low_rest.size(), '0'), nines(low_rest.size(), '9');
    const std::string any_rest = fmt::format("[0-9]{{{}}}", low_rest.size());
    std::vector<std::string> parts;
    char from = low[0], to = high[0];
    if (low_rest != zeros) parts.push_back(gbnf_literal(low.substr(0, 1)) + " (" + same_length_range(low_rest, nines) + ")"), ++from;
    if (high_rest != nines) --to;
    if (from <= to) parts.push_back(gbnf_class({{uint32_t(from), uint32_t(to)}}) + " " + any_rest);
    if (high_rest != nines) parts.push_back(gbnf_literal(high.substr(0, 1)) + " (" + same_length_range(zeros, high_rest) + ")");
    std::string out;
    for (const std::string& part : parts) out += (out.empty() ? "" : " | ") + part;
    return out;
}

// GBNF for the whole numbers in [low, high] written without leading zeros.
std::string natural_range(uint64_t low, uint64_t high) {
    const std::string low_text = std::to_string(low), high_text = std::to_string(high);
    std::vector<std::string> parts;
    for (size_t digits = low_text.size(); digits <= high_text.size(); ++digits) {
        const std::string from = digits == low_text.size() ? low_text : fmt::format("1{:0>{}}", "", digits - 1);
        const std::string to = digits == high_text.size() ? high_text : std::string(digits, '9');
        parts.push_back(same_length_range(from, to));
    }
    std::string out;
    for (const std::string& part : parts) out += (out.empty() ? "(" : " | ") + part;
    return out + ")";
}

// GBNF for the integers in [low, high]; an open side stops at 16 digits, as the integer rule does.
std::string integer_range(std::optional<int64_t> low, std::optional<int64_t> high) {
    const auto magnitude = [](int64_t v) { return v < 0 ? uint64_t(0) - uint64_t(v) : uint64_t(v); };
    uint64_t open = 1;
    for (int i = 0; i < max_unbounded_digits; ++i) open *= 10;
    open -= 1;
    std::vector<std::string> parts;
    if (!low || *low < 0) {  // negative numbers: "-" then magnitudes in [max(1, -high), -low]
        const uint64_t from = high && *high < 0 ? magnitude(*high) : 1;
        const uint64_t to = low ? magnitude(*low) : std::max(open, from);
        parts.push_back("\"-\" " + natural_range(from, to));
    }
    if (!high || *high >= 0) {
        const uint64_t from = low && *low > 0 ? uint64_t(*low) : 0;
        parts.push_back(natural_range(from, high ? uint64_t(*high) : std::max(open, from)));
    }
    std::string out;
    for (const std::string& part : parts) out += (out.empty() ? "" : " | ") + part;
    return out;
}

class SchemaConverter {
public:
    SchemaConverter(const json& root, const JsonSchemaOptions& options) : root_(root), options_(options) {}

    std::string convert() {
        const std::string& top = options_.rule_name;
        if (top.empty() || sanitized(top) != top || find_primitive(top))
            throw Error(fmt::format("json schema: the rule name '{}' must be letters, digits and '-' and not a shared "
                                    "rule's (space, string, value...)", top));
        ref_rules_["#"] = top;
        claim(top);
        // An empty schema at the top means any object, as llama.cpp's -j '{}' (nested, any value).
        define(top, root_.is_object() && root_.empty() ? primitive("object") : visit(root_, top, "#", 0), "#");
        std::string out;
        for (const auto& [name, body] : rules_) out += name + " ::= " + body + "\n";
        return out;
    }

private:
    template <class... Args>
    [[noreturn]] void fail_at(const std::string& path, fmt::format_string<Args...> format, Args&&... args) const {
        throw Error(fmt::format("json schema at {}: {}", path, fmt::format(format, std::forward<Args>(args)...)));
    }

    // A rule with this body under the wanted name: the name's rule of the same body if one was added
    // already, the name itself when free or claimed (see claim()), or the name with the first free
    // number after it. Both lookups are hashed and the numbers go on from where they stopped, so
    // adding n rules under one name (an object's rest rules, many keys that sanitize alike) is
    // linear, not a probe of every earlier number.
    std::string add_rule(const std::string& wanted, const std::string& body) {
        const std::string base = sanitized(wanted);
        const auto [same, fresh] = by_body_.try_emplace(base + '\0' + body);
        if (!fresh) return same->second;
        if (const auto it = index_.find(base); it != index_.end() && rules_[it->second].second.empty()) {
            rules_[it->second].second = body;  // a claimed name, defined by its own schema
            return same->second = base;
        }
        for (uint64_t& n = next_number_[base];; ++n) {
            const std::string name = n ? fmt::format("{}{}", base, n) : base;
            if (find_primitive(name) || index_.contains(name)) continue;
            // Refused as soon as Grammar::parse would refuse the text, not after writing all of it.
            text_bytes_ += name.size() + body.size() + 6;
            if (text_bytes_ > Grammar::max_text_bytes)
                throw Error(fmt::format("json schema: its grammar passes the {} bytes of GBNF a grammar may have (at rule '{}')",
                                        Grammar::max_text_bytes, name));
            index_.emplace(name, rules_.size());
            rules_.emplace_back(name, body);
            return same->second = name;
        }
    }
    // A name whose body comes later (the root's, a $ref's): from the add_rule of the schema visited
    // under that name, or from define().
    void claim(const std::string& name) {
        index_.emplace(name, rules_.size());
        rules_.emplace_back(name, "");
    }
    void define(const std::string& name, const std::string& symbol, const std::string& path) {
        std::string& body = rules_[index_.at(name)].second;
        if (symbol != name) body = symbol;
        else if (body.empty()) fail_at(path, "the schema is a $ref to itself and nothing else, so no value can ever finish it");
    }

    std::string primitive(std::string_view name) {
        const Primitive& p = *find_primitive(name);
        if (index_.emplace(std::string(name), rules_.size()).second) {
            rules_.emplace_back(std::string(name), std::string(p.body));
            for (std::string_view use : p.uses) primitive(use);
        }
        return std::string(name);
    }

    std::string visit(const json& schema, const std::string& name, const std::string& path, int depth);
    std::string visit_ref(const json& schema, const std::string& path, int depth);
    std::string visit_object(const json& schema, const std::string& name, const std::string& path, int depth);
    std::string visit_array(const json& schema, const std::string& name, const std::string& path, int depth);
    std::string visit_string(const json& schema, const std::string& name, const std::string& path);
    std::string visit_integer(const json& schema, const std::string& name, const std::string& path);
    std::string not_strings(const std::vector<std::string>& excluded, const std::string& name);
    uint64_t count(const json& schema, std::string_view key, const std::string& path, uint64_t fallback) const;

    const json& root_;
    JsonSchemaOptions options_;
    std::vector<std::pair<std::string, std::string>> rules_;  // in the order written (root first)
    std::unordered_map<std::string, size_t> index_;
    std::unordered_map<std::string, std::string> by_body_;      // a base name and a body -> the rule
    std::unordered_map<std::string, uint64_t> next_number_;     // a base name -> the number to try next
    std::unordered_map<std::string, std::string> ref_rules_;
    size_t text_bytes_ = 0;  // of the GBNF the rules will make
};

uint64_t SchemaConverter::count(const json& schema, std::string_view key, const std::string& path, uint64_t fallback) const {
    const auto it = schema.find(key);
    if (it == schema.end()) return fallback;
    if (!it->is_number_integer() && !(it->is_number_float() && std::floor(it->get<double>()) == it->get<double>()))
        fail_at(path, "{} must be a whole number, not {}", key, type_name(*it));
    const double value = it->get<double>();
    if (value < 0) fail_at(path, "{} must be at least 0, not {}", key, it->dump());
    if (value > double(Grammar::max_repetitions))
        fail_at(path, "{} {} is above the {} supported", key, it->dump(), Grammar::max_repetitions);
    return uint64_t(value);
}

std::string SchemaConverter::visit(const json& schema, const std::string& name, const std::string& path, int depth) {
    if (depth > max_schema_depth) fail_at(path, "the schema nests more than {} levels deep", max_schema_depth);
    if (schema.is_boolean()) {
        if (schema.get<bool>()) return primitive("value");
        fail_at(path, "the schema false admits no value");
    }
    if (!schema.is_object()) fail_at(path, "a schema must be an object or a boolean, not {}", type_name(schema));
    for (const auto& [key, value] : schema.items()) {
        if (unsupported_keywords.contains(key)) fail_at(path, "{} is not supported", key);
        if (key == "uniqueItems" && value != false) fail_at(path, "uniqueItems is not supported");
    }
    if (schema.contains("$ref")) {
        for (const auto& [key, value] : schema.items())
            if (key != "$ref" && !annotation_keywords.contains(key))
                fail_at(path, "{} beside $ref is not supported (only annotations may stand beside it)", key);
        return visit_ref(schema, path, depth);
    }
    for (const char* key : {"anyOf", "oneOf"}) {
        const auto it = schema.find(key);
        if (it == schema.end()) continue;
        if (!it->is_array() || it->empty()) fail_at(path, "{} must be a non-empty array of schemas", key);
        if (it->size() > Grammar::max_ways)
            fail_at(path, "{} lists {} schemas, more than the {} supported (each is a way the value may begin)", key, it->size(), Grammar::max_ways);
        for (const auto& [other, value] : schema.items())
            if (other != key && !annotation_keywords.contains(other))
                fail_at(path, "{} beside {} is not supported (only annotations may stand beside it)", other, key);
        std::string body;
        for (size_t i = 0; i < it->size(); ++i)
            body += (i ? " | " : "") + visit((*it)[i], fmt::format("{}-{}", name, i), fmt::format("{}/{}/{}", path, key, i), depth + 1);
        return add_rule(name, body);
    }
    if (const auto it = schema.find("const"); it != schema.end()) {
        primitive("space");
        return add_rule(name, gbnf_literal(it->dump()) + " space");
    }
    if (const auto it = schema.find("enum"); it != schema.end()) {
        if (!it->is_array() || it->empty()) fail_at(path, "enum must be a non-empty array");
        if (it->size() > Grammar::max_ways)
            fail_at(path, "enum lists {} values, more than the {} supported (each is a way the value may begin)", it->size(), Grammar::max_ways);
        std::string body;
        for (const json& value : *it) body += (body.empty() ? "(" : " | ") + gbnf_literal(value.dump());
        primitive("space");
        return add_rule(name, body + ") space");
    }
    const auto type = schema.find("type");
    if (type != schema.end() && type->is_array()) {
        if (type->empty()) fail_at(path, "type must name at least one type");
        std::string body;
        for (size_t i = 0; i < type->size(); ++i) {
            json one = schema;
            one["type"] = (*type)[i];
            body += (i ? " | " : "") + visit(one, fmt::format("{}-{}", name, i), path, depth + 1);
        }
        return add_rule(name, body);
    }
    std::string kind;
    if (type != schema.end()) {
        if (!type->is_string()) fail_at(path, "type must be a string or an array of them, not {}", type_name(*type));
        kind = type->get<std::string>();
    } else if (schema.contains("properties") || schema.contains("additionalProperties") || schema.contains("required")) {
        kind = "object";
    } else if (schema.contains("items") || schema.contains("prefixItems") || schema.contains("minItems") || schema.contains("maxItems")) {
        kind = "array";
    } else if (schema.contains("pattern") || schema.contains("format") || schema.contains("minLength") || schema.contains("maxLength")) {
        kind = "string";
    } else {
        return primitive("value");
    }
    if (kind == "object") return visit_object(schema, name, path, depth);
    if (kind == "array") return visit_array(schema, name, path, depth);
    if (kind == "string") return visit_string(schema, name, path);
    if (kind == "integer") return visit_integer(schema, name, path);
    if (kind == "number") {
        for (const char* bound : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})
            if (schema.contains(bound)) fail_at(path, "{} on a number is not supported (on an integer it is)", bound);
        return primitive("number");
    }
    if (kind == "boolean" || kind == "null") return primitive(kind);
    fail_at(path, "type '{}' is not one of object, array, string, number, integer, boolean and null", kind);
}

std::string SchemaConverter::visit_ref(const json& schema, const std::string& path, int depth) {
    const json& ref_value = schema["$ref"];
    if (!ref_value.is_string()) fail_at(path, "$ref must be a string, not {}", type_name(ref_value));
    const std::string ref = ref_value.get<std::string>();
    if (const auto it = ref_rules_.find(ref); it != ref_rules_.end()) return it->second;
    if (!ref.starts_with("#")) fail_at(path, "$ref '{}' is not supported: only references within the schema (#/...) are", ref);
    const json* target = nullptr;
    try {
        target = &root_.at(json::json_pointer(ref.substr(1)));
    } catch (const json::exception&) {
        fail_at(path, "$ref '{}' names nothing in the schema", ref);
    }
    // The name is claimed before the target is visited, so that a recursive reference finds it.
    std::string name;
    for (int n = 0;; ++n) {
        name = sanitized(options_.rule_name + "-ref-" + ref.substr(1)) + (n ? std::to_string(n) : "");
        if (!index_.contains(name) && !find_primitive(name)) break;
    }
    claim(name);
    ref_rules_.emplace(ref, name);
    define(name, visit(*target, name, ref, depth + 1), ref);
    return name;
}

// "{" then the members in the schema's order (as OpenAI's structured outputs write them; llama.cpp
// puts the required ones first): required ones always, optional ones each free to be absent, then
// any additional ones; commas only between members. The rest after member i is a rule of its own
// (rest), and so is "from member i on, nothing written yet" where member i may be absent (from), so
// the grammar grows linearly with the number of properties.
std::string SchemaConverter::visit_object(const json& schema, const std::string& name, const std::string& path, int depth) {
    const json empty = json::object();
    const json& properties = schema.contains("properties") ? schema["properties"] : empty;
    if (!properties.is_object()) fail_at(path, "properties must be an object, not {}", type_name(properties));
    std::unordered_set<std::string> required;
    if (const auto it = schema.find("required"); it != schema.end()) {
        if (!it->is_array()) fail_at(path, "required must be an array of property names, not {}", type_name(*it));
        for (const json& key : *it) {
            if (!key.is_string()) fail_at(path, "required must list property names (strings), not {}", type_name(key));
            required.insert(key.get<std::string>());
        }
    }
    json additional = options_.strict ? json(false) : json(true);
    if (const auto it = schema.find("additionalProperties"); it != schema.end()) additional = *it;
    if (!additional.is_boolean() && !additional.is_object())
        fail_at(path, "additionalProperties must be a boolean or a schema, not {}", type_name(additional));
    const bool more_allowed = additional != false;
    if (properties.empty() && required.empty() && additional == true) return primitive("object");

    enum class Mode { Required, Optional, Repeated };
    struct Member {
        std::string kv;
        Mode mode;
    };
    std::vector<Member> members;
    std::vector<std::string> names;
    primitive("space");
    const auto add_member = [&](const std::string& key, const std::string& value_symbol) {
        const std::string kv = add_rule(name + "-" + key + "-kv", gbnf_literal(json(key).dump()) + " space \":\" space " + value_symbol);
        members.push_back({kv, required.contains(key) ? Mode::Required : Mode::Optional});
        names.push_back(key);
    };
    std::unordered_set<std::string_view> listed;  // properties' names, hashed: the ordered object's find is linear
    for (const auto& [key, value] : properties.items()) {
        listed.insert(key);
        add_member(key, visit(value, name + "-" + key, path + "/properties/" + pointer_token(key), depth + 1));
    }
    for (const json& key : schema.value("required", json::array())) {
        if (listed.contains(key.get_ref<const std::string&>())) continue;
        if (!more_allowed) fail_at(path, "required property '{}' is not among the properties, and no others are allowed", key.get<std::string>());
        add_member(key.get<std::string>(), primitive("value"));
    }
    if (more_allowed) {
        const std::string key_rule = names.empty() ? primitive("string") : not_strings(names, name + "-additional-k");
        const std::string value_rule = additional.is_object()
            ? visit(additional, name + "-additional-value", path + "/additionalProperties", depth + 1) : primitive("value");
        members.push_back({add_rule(name + "-additional-kv", key_rule + " \":\" space " + value_rule), Mode::Repeated});
    }

    // Any of a run of optional members may be the next written: each is a way the grammar follows.
    size_t run = 0, longest_run = 0;
    for (const Member& member : members) longest_run = std::max(longest_run, run = member.mode == Mode::Optional ? run + 1 : 0);
    if (longest_run > Grammar::max_ways)
        fail_at(path, "{} optional properties follow each other, more than the {} supported (any of them may be the next "
                      "one written): make some of them required", longest_run, Grammar::max_ways);
    const size_t n = members.size();
    const auto comma_kv = [&](size_t i) { return "\",\" space " + members[i].kv; };
    std::vector<std::string> rest(n + 1);  // as symbols; "" when nothing
    for (size_t i = n; i-- > 1;) {
        const std::string part = members[i].mode == Mode::Required ? comma_kv(i)
                               : "(" + comma_kv(i) + (members[i].mode == Mode::Optional ? ")?" : ")*");
        rest[i] = rest[i + 1].empty() ? part : add_rule(name + "-rest", part + " " + rest[i + 1]);
    }
    // Up to the first required member each may be the first written.
    const size_t first_required = size_t(std::ranges::find(members, Mode::Required, &Member::mode) - members.begin());
    std::string from;
    for (size_t i = std::min(first_required, n - (n ? 1 : 0)) + 1; n && i-- > 0;) {
        const std::string written = members[i].kv + (members[i].mode == Mode::Repeated ? " (" + comma_kv(i) + ")*" : "") +
                                    (rest[i + 1].empty() ? "" : " " + rest[i + 1]);
        if (members[i].mode == Mode::Required) from = written;
        else if (from.empty()) from = "(" + written + ")?";
        else from = add_rule(name + "-from", written + " | " + from);
    }
    return add_rule(name, "\"{\" space " + (from.empty() ? "" : from + " ") + "\"}\" space");
}

// A JSON string key that is none of `excluded`, written with raw characters only (an escape could
// spell an excluded key another way): a trie of the excluded keys, each node a rule that leaves it
// by another character or ends where no excluded key ends.
std::string SchemaConverter::not_strings(const std::vector<std::string>& excluded, const std::string& name) {
    struct Node {
        std::map<uint32_t, size_t> children;
        bool end = false;
    };
    std::vector<Node> trie(1);
    for (const std::string& key : excluded) {
        size_t node = 0;
        for (std::string_view rest = key; !rest.empty();) {
            const Utf8Char c = decode_utf8(rest);
            rest.remove_prefix(c.length ? c.length : 1);
            auto [it, added] = trie[node].children.try_emplace(c.code_point, trie.size());
            if (added) trie.emplace_back();
            node = it->second;
        }
        trie[node].end = true;
    }
    const std::string key_char = add_rule("key-char", "[^\\x22\\x5C\\x00-\\x1F]");  // shared: always this text
    std::vector<std::string> rule_of(trie.size());
    for (size_t node = trie.size(); node-- > 0;) {  // children were created after their parents
        std::vector<std::pair<uint32_t, uint32_t>> taken = {{0x00, 0x1F}, {'"', '"'}, {'\\', '\\'}};
        std::string body;
        for (const auto& [c, child] : trie[node].children) {
            taken.emplace_back(c, c);
            const std::string next = rule_of[child].empty() ? key_char + "+" : rule_of[child];  // past a whole excluded key: any more
            body += fmt::format("{}{} {}", body.empty() ? "" : " | ", gbnf_class({{c, c}}), next);
        }
        body += fmt::format("{}{} {}*", body.empty() ? "" : " | ", gbnf_class(taken, true), key_char);
        if (!trie[node].end) body = "| " + body;  // the key may stop here
        rule_of[node] = trie[node].children.empty() && trie[node].end ? "" : add_rule(name, body);
    }
    return add_rule(name, "\"\\x22\" " + rule_of[0] + " \"\\x22\" space");
}

std::string SchemaConverter::visit_array(const json& schema, const std::string& name, const std::string& path, int depth) {
    primitive("space");
    const json* tuple = nullptr;
    const json* extra = nullptr;
    std::string extra_key;
    if (const auto it = schema.find("prefixItems"); it != schema.end()) {
        tuple = &*it;
        extra_key = "items";
    } else if (const auto items = schema.find("items"); items != schema.end() && items->is_array()) {
        tuple = &*items;  // the tuple form before 2020-12
        extra_key = "additionalItems";
    }
    if (tuple) {
        if (!tuple->is_array()) fail_at(path, "prefixItems must be an array of schemas, not {}", type_name(*tuple));
        if (schema.contains("minItems") || schema.contains("maxItems")) fail_at(path, "minItems and maxItems beside a tuple are not supported");
        if (const auto it = schema.find(extra_key); it != schema.end()) extra = &*it;
        std::string body = "\"[\" space";
        for (size_t i = 0; i < tuple->size(); ++i)
            body += std::string(i ? " \",\" space " : " ") +
                    visit((*tuple)[i], fmt::format("{}-tuple-{}", name, i), fmt::format("{}/{}/{}", path, extra_key == "items" ? "prefixItems" : "items", i), depth + 1);
        const json more = extra ? *extra : json(!options_.strict);
        if (more != false) {
            const std::string item = visit(more, name + "-extra", path + "/" + extra_key, depth + 1);
            body += tuple->empty() ? " (" + item + " (\",\" space " + item + ")*)?" : " (\",\" space " + item + ")*";
        }
        return add_rule(name, body + " \"]\" space");
    }
    const std::string item = schema.contains("items") ? visit(schema["items"], name + "-item", path + "/items", depth + 1) : primitive("value");
    const uint64_t min = count(schema, "minItems", path, 0), max = count(schema, "maxItems", path, unbounded);
    if (max < min) fail_at(path, "maxItems {} is below minItems {}", max, min);
    std::string items;
    if (max > 0) {
        // item ("," space item){min-1,max-1}, optional as a whole when min is 0
        const uint64_t more_min = min ? min - 1 : 0;
        const std::string more = max == unbounded ? (more_min ? fmt::format("{{{},}}", more_min) : "*")
                                                  : fmt::format("{{{},{}}}", more_min, max - 1);
        items = item + (max == 1 ? "" : " (\",\" space " + item + ")" + more);
        if (min == 0) items = "(" + items + ")?";
        items += " ";
    }
    return add_rule(name, "\"[\" space " + items + "\"]\" space");
}

std::string SchemaConverter::visit_string(const json& schema, const std::string& name, const std::string& path) {
    primitive("space");
    const bool lengths = schema.contains("minLength") || schema.contains("maxLength");
    if (const auto it = schema.find("pattern"); it != schema.end()) {
        if (!it->is_string()) fail_at(path, "pattern must be a string, not {}", type_name(*it));
        if (lengths || schema.contains("format")) fail_at(path, "pattern together with a length or format is not supported");
        std::string body;
        try {
            body = pattern_to_gbnf(it->get<std::string>());
        } catch (const Error& error) {
            fail_at(path, "the pattern '{}': {}", it->get<std::string>(), error.what());
        }
        return add_rule(name, "\"\\x22\" " + body + " \"\\x22\" space");
    }
    if (const auto it = schema.find("format"); it != schema.end()) {
        if (!it->is_string()) fail_at(path, "format must be a string, not {}", type_name(*it));
        const std::string format = it->get<std::string>();
        const bool uuid = format == "uuid" || (format.size() == 5 && format.starts_with("uuid") && format[4] >= '1' && format[4] <= '5');
        if (uuid || format == "date" || format == "time" || format == "date-time") {
            if (lengths) fail_at(path, "format {} together with minLength or maxLength is not supported", format);
            return primitive(uuid ? "uuid" : format + "-string");
        }
    }
    if (!lengths) return primitive("string");
    const uint64_t min = count(schema, "minLength", path, 0), max = count(schema, "maxLength", path, unbounded);
    if (max < min) fail_at(path, "maxLength {} is below minLength {}", max, min);
    const std::string char_rule = primitive("char");
    const std::string repeat = max == unbounded ? fmt::format("{{{},}}", min) : fmt::format("{{{},{}}}", min, max);
    return add_rule(name, "\"\\x22\" " + (max == 0 ? "" : char_rule + repeat + " ") + "\"\\x22\" space");
}

std::string SchemaConverter::visit_integer(const json& schema, const std::string& name, const std::string& path) {
    // Bounds as integers: inclusive ones rounded inward, exclusive ones (a number, or draft 4's
    // boolean beside minimum / maximum) made inclusive.
    const auto bound = [&](const char* key, const char* exclusive_key, bool lower) -> std::optional<int64_t> {
        std::optional<double> value;
        bool exclusive = false;
        if (const auto it = schema.find(key); it != schema.end()) {
            if (!it->is_number()) fail_at(path, "{} must be a number, not {}", key, type_name(*it));
            value = it->get<double>();
        }
        if (const auto it = schema.find(exclusive_key); it != schema.end()) {
            if (it->is_boolean()) {
                exclusive = it->get<bool>() && value;
            } else {
                if (!it->is_number()) fail_at(path, "{} must be a number, not {}", exclusive_key, type_name(*it));
                const double e = it->get<double>();
                if (!value || (lower ? e >= *value : e <= *value)) {
                    value = e;
                    exclusive = true;
                }
            }
        }
        if (!value) return std::nullopt;
        double edge = lower ? std::ceil(*value) : std::floor(*value);
        if (exclusive && edge == *value) edge += lower ? 1 : -1;
        if (std::abs(edge) > 9e15) fail_at(path, "{} {} is beyond the integers supported (up to 16 digits)", key, *value);
        return int64_t(edge);
    };
    const std::optional<int64_t> low = bound("minimum", "exclusiveMinimum", true), high = bound("maximum", "exclusiveMaximum", false);
    if (!low && !high) return primitive("integer");
    if (low && high && *low > *high) fail_at(path, "no integer lies between its minimum and maximum");
    primitive("space");
    return add_rule(name, "(" + integer_range(low, high) + ") space");
}

}  // namespace

std::string json_schema_to_gbnf(const nlohmann::ordered_json& schema, const JsonSchemaOptions& options) {
    try {
        return SchemaConverter(schema, options).convert();
    } catch (const nlohmann::json::exception& error) {
        throw Error(fmt::format("json schema: {}", error.what()));  // a string that is not UTF-8, for one
    }
}

nlohmann::ordered_json parse_json_schema(std::string_view text) { return parse_json(text, "json schema"); }

std::shared_ptr<const Grammar> json_schema_grammar(const nlohmann::ordered_json& schema, const JsonSchemaOptions& options) {
    const std::string gbnf = json_schema_to_gbnf(schema, options);
    try {
        return Grammar::parse(gbnf);
    } catch (const Error& error) {
        throw Error(fmt::format("json schema: its grammar is refused: {}", error.what()));
    }
}

std::string json_object_gbnf() { return json_schema_to_gbnf(nlohmann::ordered_json{{"type", "object"}}); }

}  // namespace vkllm::sampling
