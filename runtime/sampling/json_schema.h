#pragma once
// JSON Schema to GBNF, as llama.cpp's json-schema-to-grammar converts it: types (object, array,
// string, number, integer, boolean, null, and lists of them), properties with required ones in order
// and optional ones each free to be absent, additionalProperties, enum, const, anyOf / oneOf (oneOf
// as anyOf, as llama.cpp), items and prefixItems with minItems / maxItems, string minLength /
// maxLength, pattern (schema_pattern.h), format date, time, date-time and uuid (other formats are
// annotations: any string), integer minimum / maximum / exclusive bounds, and local $refs
// (#/$defs/..., #/definitions/..., any #/ pointer; recursion allowed). Between tokens the JSON takes
// at most llama.cpp's bounded whitespace (a space, or one or two new lines and up to 20 blanks), so
// generation cannot loop on spaces. The empty schema {} at the top means any object (llama.cpp's
// -j '{}'); nested, any value. Anything else that constrains values (not, allOf, if/then/else,
// uniqueItems, multipleOf, bounds on a number, ...) fails with one sentence naming its schema path.
#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "sampling/grammar.h"

namespace vkllm::sampling {

struct JsonSchemaOptions {
    // An object schema without additionalProperties admits only its listed properties (OpenAI's
    // strict mode and llama.cpp); false follows JSON Schema, where further properties may follow.
    // The same for array tuples without further items.
    bool strict = true;
    // The rule the schema's value is; every other rule's name but the shared primitives' (space,
    // string, value...) begins with it. Grammars of several schemas under different names join into
    // one by concatenating their texts (the primitives they repeat are the same text, which the
    // parser takes) under a root rule of one's own that refers to them, as tool calls need.
    std::string rule_name = "root";
};

// The grammar as GBNF text. Throws vkllm::Error, e.g. "json schema at #/properties/tags:
// uniqueItems is not supported".
std::string json_schema_to_gbnf(const nlohmann::ordered_json& schema, const JsonSchemaOptions& options = {});
// A schema's JSON text parsed (core/json.h); throws vkllm::Error naming the byte where it is not JSON.
nlohmann::ordered_json parse_json_schema(std::string_view text);
// Converted and parsed, ready for SamplerParams::grammar.
std::shared_ptr<const Grammar> json_schema_grammar(const nlohmann::ordered_json& schema, const JsonSchemaOptions& options = {});

// Any JSON object (OpenAI's response_format {"type": "json_object"}).
std::string json_object_gbnf();

}  // namespace vkllm::sampling
