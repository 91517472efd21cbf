#pragma once
// The one parser for JSON that comes from outside (request bodies, tool-call arguments a client or a
// model wrote, schemas, templates' input): nlohmann's SAX parser, which is iterative and linear, with a
// handler that refuses nesting past a bound before the tree gets deeper and appends object members
// without nlohmann's ordered map's linear key lookup (its callback parser and `operator[]` are
// quadratic on wide input). Members keep the text's order; a key given twice in one object is refused,
// as a client that repeats "model" or a property means one of them and we would have to guess which.
// Every tree it returns is at most `max_depth` deep, so recursive walks of it (copies, dumps, template
// values) cannot run out of stack.
#include <nlohmann/json.hpp>

#include <optional>
#include <string_view>

#include "core/error.h"

namespace vkllm {

// How deep any JSON from outside may nest (containers inside containers).
inline constexpr int max_json_depth = 64;

// The value `text` holds, or an Error naming `subject` ("the request body", "'messages[0]...'") and
// what is wrong: not valid JSON (with the byte), nesting past `max_depth`, a repeated key.
nlohmann::ordered_json parse_json(std::string_view text, std::string_view subject, int max_depth = max_json_depth);

// The same, none where parse_json would throw (for text the model wrote, where malformed is an answer).
std::optional<nlohmann::ordered_json> try_parse_json(std::string_view text, int max_depth = max_json_depth);

}  // namespace vkllm
