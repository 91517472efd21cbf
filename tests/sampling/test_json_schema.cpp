// JSON Schema to GBNF: documents generated through the grammar (random logits over a toy vocabulary
// of single characters and multi-character pieces, many seeds) always parse and validate against
// their schema under a small validator written here; the grammar refuses documents that break the
// schema; patterns mean what std::regex says; unsupported constructs fail naming their path.
#include <doctest/doctest.h>

#include <map>
#include <regex>
#include <set>
#include <span>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "sampling/json_schema.h"
#include "sampling/schema_pattern.h"
#include "sampling/sampler.h"
#include "sampling/utf8.h"

using namespace vkllm::sampling;
using json = nlohmann::ordered_json;

namespace {

size_t code_points(const std::string& text) {
    size_t n = 0;
    for (char c : text) n += (uint8_t(c) & 0xC0) != 0x80;
    return n;
}

// JSON Schema validation for the keywords the converter supports; `why` says what failed.
class Validator {
public:
    explicit Validator(const json& root, bool strict = true) : root_(root), strict_(strict) {}

    bool valid(const json& value, const json& schema, std::string& why) const {
        if (schema.is_boolean()) return schema.get<bool>() || (why = "false schema", false);
        if (schema.contains("$ref")) return valid(value, root_.at(json::json_pointer(schema["$ref"].get<std::string>().substr(1))), why);
        if (schema.contains("anyOf") || schema.contains("oneOf")) {
            const bool one = schema.contains("oneOf");
            int matched = 0;
            for (const json& alternative : schema[one ? "oneOf" : "anyOf"]) {
                std::string ignored;
                matched += valid(value, alternative, ignored);
            }
            return (one ? matched == 1 : matched > 0) || (why = "no alternative matches " + value.dump(), false);
        }
        if (schema.contains("const")) return value == schema["const"] || (why = value.dump() + " is not the const", false);
        if (schema.contains("enum")) {
            for (const json& option : schema["enum"])
                if (option == value) return true;
            return why = value.dump() + " is not in the enum", false;
        }
        if (schema.contains("type")) {
            const json types = schema["type"].is_array() ? schema["type"] : json::array({schema["type"]});
            bool typed = false;
            for (const json& type : types) typed = typed || is_type(value, type.get<std::string>());
            if (!typed) return why = value.dump() + " is not of type " + schema["type"].dump(), false;
        }
        if (value.is_object()) return valid_object(value, schema, why);
        if (value.is_array()) return valid_array(value, schema, why);
        if (value.is_string()) return valid_string(value.get<std::string>(), schema, why);
        if (value.is_number()) {
            const double x = value.get<double>();
            if (schema.contains("minimum") && x < schema["minimum"].get<double>()) return why = value.dump() + " < minimum", false;
            if (schema.contains("maximum") && x > schema["maximum"].get<double>()) return why = value.dump() + " > maximum", false;
            if (schema.contains("exclusiveMinimum") && x <= schema["exclusiveMinimum"].get<double>()) return why = "exclusiveMinimum", false;
            if (schema.contains("exclusiveMaximum") && x >= schema["exclusiveMaximum"].get<double>()) return why = "exclusiveMaximum", false;
        }
        return true;
    }

private:
    static bool is_type(const json& value, const std::string& type) {
        if (type == "integer") return value.is_number_integer() || (value.is_number_float() && std::floor(value.get<double>()) == value.get<double>());
        return (type == "object" && value.is_object()) || (type == "array" && value.is_array()) || (type == "string" && value.is_string()) ||
               (type == "number" && value.is_number()) || (type == "boolean" && value.is_boolean()) || (type == "null" && value.is_null());
    }

    bool valid_object(const json& value, const json& schema, std::string& why) const {
        const json properties = schema.value("properties", json::object());
        for (const json& key : schema.value("required", json::array()))
            if (!value.contains(key.get<std::string>())) return why = "required " + key.dump() + " is missing", false;
        const json additional = schema.value("additionalProperties", json(!strict_));
        for (const auto& [key, member] : value.items()) {
            const json& member_schema = properties.contains(key) ? properties[key] : additional;
            if (!valid(member, member_schema, why)) return why = key + ": " + why, false;
        }
        return true;
    }

    bool valid_array(const json& value, const json& schema, std::string& why) const {
        if (schema.contains("minItems") && value.size() < schema["minItems"].get<size_t>()) return why = "too few items", false;
        if (schema.contains("maxItems") && value.size() > schema["maxItems"].get<size_t>()) return why = "too many items", false;
        const json prefix = schema.value("prefixItems", json::array());
        for (size_t i = 0; i < value.size(); ++i) {
            const json& item_schema = i < prefix.size() ? prefix[i] : schema.contains("items") ? schema["items"]
                                    : json(prefix.empty() || !strict_);
            if (!valid(value[i], item_schema, why)) return why = "item " + std::to_string(i) + ": " + why, false;
        }
        return value.size() >= prefix.size() || (why = "short tuple", false);
    }

    static bool valid_string(const std::string& text, const json& schema, std::string& why) {
        if (schema.contains("minLength") && code_points(text) < schema["minLength"].get<size_t>()) return why = "too short", false;
        if (schema.contains("maxLength") && code_points(text) > schema["maxLength"].get<size_t>()) return why = "too long", false;
        if (schema.contains("pattern") && !std::regex_search(text, std::regex(schema["pattern"].get<std::string>())))
            return why = "'" + text + "' does not match the pattern", false;
        static const std::map<std::string, std::regex> formats = {
            {"date", std::regex(R"(\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01]))")},
            {"time", std::regex(R"(([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d{3})?(Z|[+-]([01]\d|2[0-3]):[0-5]\d))")},
            {"date-time", std::regex(R"(\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])T([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d{3})?(Z|[+-]([01]\d|2[0-3]):[0-5]\d))")},
            {"uuid", std::regex(R"([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})")}};
        if (schema.contains("format") && formats.contains(schema["format"]) && !std::regex_match(text, formats.at(schema["format"])))
            return why = "'" + text + "' is not a " + schema["format"].get<std::string>(), false;
        return true;
    }

    const json& root_;
    bool strict_;
};

// A toy vocabulary: every printable ASCII character alone, a few control characters, and pieces
// that cut across JSON's structure and UTF-8 characters; token 0 ends generation, token 1 is a
// control token.
std::shared_ptr<const TokenTable> toy_vocabulary() {
    std::vector<std::string> pieces = {"</s>", "<|ctl|>", "\n", "\t", "\n  "};
    for (char c = 0x20; c < 0x7F; ++c) pieces.emplace_back(1, c);
    for (const char* piece : {"{\"", "\"}", "\":", "\",", "\", \"", "\": \"", "\": ", "[\"", "\"]", "}]", "],", "},", "true",
                              "false", "null", "123", "-4", "0.5", "e+", "2024-", "-12-", "T23", ":59", "Z\"", "\\\"", "\\n",
                              "\\u00e9", "é", "\xc3", "\xa9", "😀", "\xf0\x9f", "\x98\x80", "abc", "name", "  ", "\"a\"", "0f",
                              "-4a2b", "id", "tags", "00", "01-", "\":[", "\":{", " }", "e9"})
        pieces.emplace_back(piece);
    std::vector<TokenTable::Kind> kinds(pieces.size(), TokenTable::Kind::Text);
    kinds[0] = TokenTable::Kind::End;
    kinds[1] = TokenTable::Kind::Special;
    return std::make_shared<TokenTable>(std::move(pieces), std::move(kinds));
}

// Random logits for one step, closing punctuation a little more likely so documents stay short.
std::vector<float> random_logits(const TokenTable& table, Rng& rng) {
    std::vector<float> logits(table.size());
    for (size_t id = 0; id < logits.size(); ++id) {
        const std::string_view piece = table.piece(TokenId(id));
        const bool closing = piece.find_first_of("\"]}") != std::string_view::npos;
        logits[id] = float((rng.uniform() - 0.5) * 6 + (closing ? 2.0 : 0.0) + (id == 0 ? 4.0 : 0.0));
    }
    return logits;
}

// Samples a document through the grammar until the end token; "" when it runs past `limit` tokens.
std::string generate(const std::shared_ptr<const Grammar>& grammar, const std::shared_ptr<const TokenTable>& table,
                     uint64_t seed, int top_k = 20, size_t limit = 4000) {
    SamplerParams params;
    params.temperature = 1.0f;
    params.top_k = top_k;
    params.top_p = 1.0f;
    params.min_p = 0.0f;
    params.penalty_last_n = 0;
    params.seed = seed;
    params.grammar = grammar;
    Sampler sampler(params, table);
    Rng logits_rng(seed ^ 0x5eed);
    std::string text;
    for (size_t step = 0; step < limit; ++step) {
        const TokenId id = sampler.sample(random_logits(*table, logits_rng));
        if (table->kind(id) == TokenTable::Kind::End) return text;
        text += table->piece(id);
    }
    return "";
}

struct SchemaCase {
    std::string name;
    json schema;
};

std::vector<SchemaCase> schema_cases() {
    return {
        {"nested objects, enums, arrays with bounds and optional fields", json::parse(R"({
            "type": "object",
            "properties": {
                "name": {"type": "string", "minLength": 1, "maxLength": 12},
                "age": {"type": "integer", "minimum": 0, "maximum": 130},
                "role": {"enum": ["admin", "user", "guest"]},
                "tags": {"type": "array", "items": {"type": "string", "maxLength": 5}, "minItems": 1, "maxItems": 3},
                "address": {"type": "object", "properties": {
                    "street": {"type": "string"}, "zip": {"type": "string", "pattern": "^[0-9]{5}$"},
                    "geo": {"type": "object", "properties": {"lat": {"type": "number"}, "lon": {"type": "number"}},
                            "required": ["lat", "lon"]}},
                    "required": ["street"]},
                "active": {"type": "boolean"},
                "nickname": {"type": ["string", "null"]}
            },
            "required": ["name", "role", "tags"]})")},
        {"$ref to $defs and definitions, recursive", json::parse(R"({
            "$defs": {"node": {"type": "object", "properties": {
                "value": {"type": "integer", "exclusiveMinimum": -3, "exclusiveMaximum": 1000},
                "children": {"type": "array", "items": {"$ref": "#/$defs/node"}, "maxItems": 2}},
                "required": ["value"]}},
            "definitions": {"leaf": {"const": "leaf"}},
            "type": "object",
            "properties": {"tree": {"$ref": "#/$defs/node"}, "kind": {"$ref": "#/definitions/leaf"}},
            "required": ["tree", "kind"]})")},
        {"formats, anyOf, const, tuples", json::parse(R"({
            "type": "object",
            "properties": {
                "day": {"type": "string", "format": "date"},
                "at": {"type": "string", "format": "time"},
                "stamp": {"type": "string", "format": "date-time"},
                "id": {"type": "string", "format": "uuid"},
                "either": {"anyOf": [{"type": "integer", "minimum": 10, "maximum": 99}, {"type": "string", "maxLength": 2}]},
                "version": {"const": {"major": 1, "tag": "a\"b"}},
                "pair": {"type": "array", "prefixItems": [{"type": "boolean"}, {"enum": [1, 2.5, null]}]},
                "email": {"type": "string", "format": "email"}
            },
            "required": ["day", "at", "stamp", "id", "either", "version", "pair"]})")},
        {"additional properties and patterns", json::parse(R"({
            "type": "object",
            "properties": {"code": {"type": "string", "pattern": "^(ab|c[d-f]+)\\.x?$"}, "n": {"type": "integer", "maximum": -5}},
            "additionalProperties": {"type": "integer", "minimum": 0, "maximum": 9},
            "required": ["code"]})")},
        {"a bare array of numbers", json::parse(R"({"type": "array", "items": {"type": "number"}, "maxItems": 4})")},
        {"oneOf with disjoint objects", json::parse(R"({"oneOf": [
            {"type": "object", "properties": {"cat": {"const": true}}, "required": ["cat"]},
            {"type": "object", "properties": {"dog": {"type": "string", "maxLength": 3}}, "required": ["dog"]}]})")},
    };
}

std::string conversion_error(const json& schema) {
    try {
        json_schema_grammar(schema);
    } catch (const vkllm::Error& error) {
        return error.what();
    }
    return "";
}

}  // namespace

TEST_CASE("documents generated through a schema's grammar parse and validate, seed after seed") {
    const auto table = toy_vocabulary();
    for (const SchemaCase& c : schema_cases()) {
        CAPTURE(c.name);
        const auto grammar = json_schema_grammar(c.schema);
        const Validator validator(c.schema);
        std::set<std::string> distinct;
        for (uint64_t seed = 1; seed <= 40; ++seed) {
            CAPTURE(seed);
            const std::string text = generate(grammar, table, seed);
            CAPTURE(text);
            REQUIRE_FALSE(text.empty());
            json document;
            REQUIRE_NOTHROW(document = json::parse(text));
            std::string why;
            CHECK_MESSAGE(validator.valid(document, c.schema, why), why);
            distinct.insert(document.dump());
        }
        CHECK(distinct.size() > 10);  // the grammar leaves room to vary, and the samples use it
    }
}

TEST_CASE("json_object mode always gives an object") {
    const auto table = toy_vocabulary();
    const auto grammar = Grammar::parse(json_object_gbnf());
    for (uint64_t seed = 1; seed <= 40; ++seed) {
        const std::string text = generate(grammar, table, seed);
        CAPTURE(text);
        REQUIRE_FALSE(text.empty());
        CHECK(json::parse(text).is_object());
    }
}

TEST_CASE("the grammar refuses documents that break the schema") {
    const json schema = schema_cases()[0].schema;
    const auto grammar = json_schema_grammar(schema);
    const auto accepts = [&](std::string_view text) {
        GrammarMatcher m(grammar, nullptr);
        return m.accept_text(text) && m.can_end();
    };
    CHECK(accepts(R"({"name": "Ann", "role": "user", "tags": ["x"]})"));
    CHECK(accepts(R"({"name":"Ann","age":130,"role":"guest","tags":["a","bb","ccccc"],"address":{"street":"Main"},"nickname":null})"));
    CHECK(accepts("{\n  \"name\": \"A\",\n  \"role\": \"user\",\n  \"tags\": [\"\"]\n}"));
    CHECK_FALSE(accepts(R"({"name": "Ann", "tags": ["x"]})"));                                   // role is required
    CHECK_FALSE(accepts(R"({"name": "Ann", "role": "root", "tags": ["x"]})"));                   // not in the enum
    CHECK_FALSE(accepts(R"({"name": "Ann", "role": "user", "tags": []})"));                      // minItems 1
    CHECK_FALSE(accepts(R"({"name": "Ann", "role": "user", "tags": ["a", "b", "c", "d"]})"));    // maxItems 3
    CHECK_FALSE(accepts(R"({"name": "Ann", "role": "user", "tags": ["toolong"]})"));             // maxLength 5
    CHECK_FALSE(accepts(R"({"name": "Ann", "age": 131, "role": "user", "tags": ["x"]})"));       // maximum
    CHECK_FALSE(accepts(R"({"name": "Ann", "age": -1, "role": "user", "tags": ["x"]})"));        // minimum
    CHECK_FALSE(accepts(R"({"name": "Ann", "age": 007, "role": "user", "tags": ["x"]})"));       // leading zeros
    CHECK_FALSE(accepts(R"({"name": "Ann", "role": "user", "tags": ["x"], "extra": 1})"));       // no additional properties
    CHECK_FALSE(accepts(R"({"name": "", "role": "user", "tags": ["x"]})"));                      // minLength 1
    CHECK_FALSE(accepts(R"({"name": "Ann", "role": "user", "tags": ["x"], "address": {"zip": "12345"}})"));  // street
    CHECK_FALSE(accepts(R"({"name": "Ann", "role": "user", "tags": ["x"], "address": {"street": "a", "zip": "1234"}})"));
    CHECK_FALSE(accepts(std::string("{\"name\": \"A\",") + std::string(30, ' ') + "\"role\": \"user\", \"tags\": [\"x\"]}"));  // bounded space
    // Optional properties keep their order; absent ones are skipped.
    CHECK(accepts(R"({"name": "A", "role": "user", "tags": ["x"], "active": true})"));
    CHECK_FALSE(accepts(R"({"name": "A", "role": "user", "tags": ["x"], "active": true, "age": 3})"));

    // Additional properties may not reuse a listed name (under another schema).
    const auto more = json_schema_grammar(schema_cases()[3].schema);
    const auto more_accepts = [&](std::string_view text) {
        GrammarMatcher m(more, nullptr);
        return m.accept_text(text) && m.can_end();
    };
    CHECK(more_accepts(R"({"code": "ab.", "x": 3, "nn": 4, "": 5})"));
    CHECK_FALSE(more_accepts(R"({"code": "ab.", "n": 3})"));     // n is listed: it must be <= -5
    CHECK(more_accepts(R"({"code": "ab.", "n": -7})"));
    CHECK_FALSE(more_accepts(R"({"code": "ab.x!", "x": 3})"));  // the pattern is anchored
}

TEST_CASE("integer bounds: exactly the integers in range") {
    struct Bounds {
        json schema;
        int64_t low, high;
    };
    const Bounds cases[] = {
        {json::parse(R"({"type": "integer", "minimum": 7, "maximum": 1234})"), 7, 1234},
        {json::parse(R"({"type": "integer", "minimum": -250, "maximum": -13})"), -250, -13},
        {json::parse(R"({"type": "integer", "minimum": -19, "maximum": 20})"), -19, 20},
        {json::parse(R"({"type": "integer", "exclusiveMinimum": 0.5, "exclusiveMaximum": 100})"), 1, 99},
        {json::parse(R"({"type": "integer", "minimum": 5, "exclusiveMinimum": true, "maximum": 10})"), 6, 10},
        {json::parse(R"({"type": "integer", "minimum": 990})"), 990, 3000},
        {json::parse(R"({"type": "integer", "maximum": -990})"), -3000, -990},
    };
    for (const Bounds& b : cases) {
        CAPTURE(b.schema.dump());
        const auto grammar = json_schema_grammar(b.schema);
        for (int64_t x = -3000; x <= 3000; ++x) {
            GrammarMatcher m(grammar, nullptr);
            const bool in = m.accept_text(std::to_string(x)) && m.can_end();
            CHECK_MESSAGE(in == (x >= b.low && x <= b.high), x);
        }
    }
}

TEST_CASE("patterns mean what std::regex says") {
    struct Pattern {
        const char* regex;
        bool anchored;            // both ends of every alternative
        std::vector<std::string> matching;
    };
    const Pattern patterns[] = {
        {"^[a-c]+\\d{2}$", true, {"ab01", "c99"}},
        {"^(ab|c)*\\.x?$", true, {".", "abcab.x"}},
        {"^\"q\\\\[^\\n]{0,3}$", true, {"\"q\\", "\"q\\\"\\ "}},
        {"^\\w\\W\\s\\S$", true, {"a- x", "_\\\n\""}},
        {"^(?:a|b){2,3}c?$", true, {"ab", "bbac"}},
        {"^([\\-\\]^]z|y)$", true, {"-z", "]z", "^z", "y"}},
        {"^.{2}$", true, {"\"\\", "ab"}},
        {"b+", false, {"b", "abba\"\n"}},
        {"c\\d", false, {"xc1y"}},
        {"a|z$", false, {"a", "\\z"}},
        {"^a", false, {"a\"b"}},
        {"^[\\-\\]^]z|y$", false, {"-zzz", "xy"}},
    };
    Rng rng(3);
    const std::string alphabet = "abcz019.\"\\\n x-]^y";
    for (const Pattern& p : patterns) {
        CAPTURE(p.regex);
        const auto grammar = Grammar::parse("root ::= \"\\x22\" (" + pattern_to_gbnf(p.regex) + ") \"\\x22\"");
        const std::regex regex(p.regex);
        const auto accepts = [&](const std::string& text) {
            GrammarMatcher m(grammar, nullptr);
            return m.accept_text(json(text).dump()) && m.can_end();
        };
        for (const std::string& text : p.matching) {
            CAPTURE(text);
            REQUIRE(std::regex_search(text, regex));
            // Unanchored sides take raw characters only: there a character needing an escape is refused.
            if (p.anchored || text.find_first_of("\"\\\n") == std::string::npos) CHECK(accepts(text));
        }
        for (int i = 0; i < 2000; ++i) {
            std::string text;
            for (size_t n = rng.next() % 7; n > 0; --n) text += alphabet[rng.next() % alphabet.size()];
            CAPTURE(text);
            const bool accepted = accepts(text), expected = std::regex_search(text, regex);
            if (p.anchored || text.find_first_of("\"\\\n") == std::string::npos) CHECK(accepted == expected);
            else if (accepted) CHECK(expected);
        }
    }
}

TEST_CASE("unsupported or malformed schemas fail naming their path") {
    const auto error = [](std::string_view text) { return conversion_error(json::parse(text)); };
    CHECK(error(R"({"type": "object", "properties": {"tags": {"type": "array", "uniqueItems": true}}})") ==
          "json schema at #/properties/tags: uniqueItems is not supported");
    CHECK(error(R"({"properties": {"a/b": {"not": {"type": "null"}}}})") == "json schema at #/properties/a~1b: not is not supported");
    CHECK(error(R"({"allOf": [{"type": "string"}]})") == "json schema at #: allOf is not supported");
    CHECK(error(R"({"type": "number", "minimum": 0})") == "json schema at #: minimum on a number is not supported (on an integer it is)");
    CHECK(error(R"({"type": "strng"})") == "json schema at #: type 'strng' is not one of object, array, string, number, integer, "
                                           "boolean and null");
    CHECK(error(R"({"$ref": "https://example.com/schema.json"})") ==
          "json schema at #: $ref 'https://example.com/schema.json' is not supported: only references within the schema (#/...) are");
    CHECK(error(R"({"items": {"$ref": "#/$defs/missing"}})") == "json schema at #/items: $ref '#/$defs/missing' names nothing in "
                                                                "the schema");
    CHECK(error(R"({"type": "string", "pattern": "^(?=a)b$"})") ==
          "json schema at #: the pattern '^(?=a)b$': it has a lookaround or group flag '(?' at character 2, which is not supported");
    CHECK(error(R"({"type": "string", "pattern": "(a)\\1"})") ==
          "json schema at #: the pattern '(a)\\1': it has a backreference (\\1) at character 4, which is not supported");
    CHECK(error(R"({"type": "string", "pattern": "a\\bc"})").ends_with("it has a word boundary (\\b) at character 2, which is not supported"));
    CHECK(error(R"({"type": "string", "pattern": "a(b"})").ends_with("its group opened at character 2 is not closed"));
    CHECK(error(R"({"type": "string", "pattern": "a^b"})").ends_with("it has '^' at character 2; anchors are supported only at its "
                                                                     "start and end"));
    CHECK(error(R"({"type": "array", "minItems": 3, "maxItems": 2})") == "json schema at #: maxItems 2 is below minItems 3");
    CHECK(error(R"({"type": "array", "maxItems": 1e9})") == "json schema at #: maxItems 1000000000.0 is above the 100000 supported");
    CHECK(error(R"({"type": "string", "minLength": -1})") == "json schema at #: minLength must be at least 0, not -1");
    CHECK(error(R"({"type": "integer", "minimum": 5, "maximum": 4})") == "json schema at #: no integer lies between its minimum and maximum");
    CHECK(error(R"({"enum": []})") == "json schema at #: enum must be a non-empty array");
    CHECK(error(R"({"anyOf": [{"type": "string"}], "type": "string"})") ==
          "json schema at #: type beside anyOf is not supported (only annotations may stand beside it)");
    CHECK(error(R"({"properties": {"x": false}})") == "json schema at #/properties/x: the schema false admits no value");
    CHECK(error(R"([1, 2])") == "json schema at #: a schema must be an object or a boolean, not an array");
    CHECK(error(R"({"required": ["q"], "additionalProperties": false})") ==
          "json schema at #: required property 'q' is not among the properties, and no others are allowed");
    std::string deep = "{}";
    for (int i = 0; i < 100; ++i) deep = R"({"type": "array", "items": )" + deep + "}";
    CHECK(error(deep).ends_with("the schema nests more than 64 levels deep"));
    CHECK_THROWS_WITH_AS(parse_json_schema("{\"type\": "), doctest::Contains("json schema is not valid JSON at byte 10: "), vkllm::Error);
    CHECK_THROWS_WITH_AS(parse_json_schema("{\"maxItems\": 1e999}"), "json schema is not valid JSON at byte 18: number overflow parsing '1e999'",
                         vkllm::Error);
    // Annotations and unknown keywords are no obstacle; unknown formats are annotations too.
    CHECK(error(R"({"title": "t", "description": "d", "x-vendor": 1, "type": "string", "format": "hostname"})").empty());
}

TEST_CASE("grammars of several schemas under their own rule names join into one") {
    const json a = json::parse(R"({"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer",
        "minimum": 1, "maximum": 7}}, "required": ["city"]})");
    const json b = json::parse(R"({"$defs": {"unit": {"enum": ["c", "f"]}}, "type": "array", "items": {"$ref": "#/$defs/unit"}})");
    const std::string joined = "root ::= \"A\" tool-a | \"B\" tool-b\n" + json_schema_to_gbnf(a, {.rule_name = "tool-a"}) +
                               json_schema_to_gbnf(b, {.rule_name = "tool-b"});
    const auto grammar = Grammar::parse(joined);
    const auto accepts = [&](std::string_view text) {
        GrammarMatcher m(grammar, nullptr);
        return m.accept_text(text) && m.can_end();
    };
    CHECK(accepts(R"(A{"city": "Oslo", "days": 3})"));
    CHECK(accepts(R"(B["c", "f"])"));
    CHECK_FALSE(accepts(R"(A["c"])"));
    CHECK_FALSE(accepts(R"(B{"city": "Oslo"})"));
    CHECK(conversion_error(json::parse("{}")).empty());
    CHECK_THROWS_WITH_AS(json_schema_to_gbnf(a, {.rule_name = "string"}),
                         "json schema: the rule name 'string' must be letters, digits and '-' and not a shared rule's "
                         "(space, string, value...)", vkllm::Error);
}

TEST_CASE("json_schema strict false admits further properties and tuple items") {
    const json schema = json::parse(R"({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]})");
    const auto open = Grammar::parse(json_schema_to_gbnf(schema, {.strict = false}));
    GrammarMatcher m(open, nullptr);
    CHECK((m.accept_text(R"({"a": 1, "b": [true], "c": {}})") && m.can_end()));
    GrammarMatcher strict(json_schema_grammar(schema), nullptr);
    CHECK_FALSE(strict.accept_text(R"({"a": 1, "b")"));
}

TEST_CASE("wide schemas: many properties convert in linear time, too many ways at once are refused naming the limit") {
    const auto object_of = [](int n, bool required, size_t name_bytes = 0) {  // as text: ordered_json's operator[] is linear per key
        std::string properties, names;
        const std::string long_name(name_bytes, 'n');
        for (int i = 0; i < n; ++i) {
            properties += fmt::format("{}\"{}p{}\": {{\"type\": \"integer\"}}", i ? ", " : "", long_name, i);
            names += fmt::format("{}\"{}p{}\"", i ? ", " : "", long_name, i);
        }
        return parse_json_schema(fmt::format("{{\"type\": \"object\", \"properties\": {{{}}}{}}}", properties,
                                             required ? ", \"required\": [" + names + "]" : ""));
    };
    // 20,000 required properties (19.7 s before: rule names numbered from where they stopped, required
    // names hashed).
    const auto required = json_schema_grammar(object_of(20000, true));
    GrammarMatcher document(required, nullptr);
    std::string text = "{";
    for (int i = 0; i < 20000; ++i) text += fmt::format("{}\"p{}\": {}", i ? ", " : "", i, i % 10);
    CHECK((document.accept_text(text + "}") && document.can_end()));
    // More GBNF than a grammar may have (as 100,000 properties make) is refused when the rules reach it.
    CHECK(conversion_error(object_of(1000, true, 2000)).starts_with("json schema: its grammar passes the 4194304 bytes of GBNF a grammar may have"));
    // Optional ones: any of a run may be the next written, each a way the grammar follows.
    CHECK(conversion_error(object_of(4000, false)).empty());
    CHECK(conversion_error(object_of(10000, false)) ==
          "json schema at #: 10000 optional properties follow each other, more than the 4096 supported (any of them may be "
          "the next one written): make some of them required");
    json enumeration = {{"enum", json::array()}};
    for (int i = 0; i < 8000; ++i) enumeration["enum"].push_back(fmt::format("v{}", i));
    CHECK(conversion_error(enumeration) ==
          "json schema at #: enum lists 8000 values, more than the 4096 supported (each is a way the value may begin)");
    json any_of = {{"anyOf", json::array()}};
    for (int i = 0; i < 50000; ++i) any_of["anyOf"].push_back({{"const", i}});
    CHECK(conversion_error(any_of) ==
          "json schema at #: anyOf lists 50000 schemas, more than the 4096 supported (each is a way the value may begin)");
    // Wide one level down, where no schema limit applies: the grammar's own check names the rule.
    json nested = {{"type", "array"}, {"items", {{"anyOf", json::array()}}}};
    for (int i = 0; i < 3000; ++i) nested["items"]["anyOf"].push_back({{"enum", {fmt::format("a{}", i), fmt::format("b{}", i)}}});
    CHECK(conversion_error(nested).starts_with("json schema: its grammar is refused: grammar: rule 'root-item' may go on in more than 4096 ways"));
}

TEST_CASE("a $ref that only refers to itself, or never finishes, is refused naming its path") {
    CHECK(conversion_error(json::parse(R"({"$ref": "#"})")) ==
          "json schema at #: the schema is a $ref to itself and nothing else, so no value can ever finish it");
    CHECK(conversion_error(json::parse(R"({"$defs": {"a": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"})")) ==
          "json schema at #/$defs/a: the schema is a $ref to itself and nothing else, so no value can ever finish it");
    // An object that requires itself: no base case, so no document is finite.
    CHECK(conversion_error(json::parse(R"({"$defs": {"a": {"type": "object", "properties": {"x": {"$ref": "#/$defs/a"}},
        "required": ["x"]}}, "$ref": "#/$defs/a"})")).starts_with("json schema: its grammar is refused: grammar: rule 'root' can never finish"));
    // With a base case (the property optional) recursion is fine.
    CHECK(conversion_error(json::parse(R"({"type": "object", "properties": {"x": {"$ref": "#"}}})")).empty());
}
