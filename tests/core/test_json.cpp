// core/json.h, the parser for JSON from outside: the same tree as nlohmann's own parser, keys in
// the text's order, nesting refused past the bound before the tree gets deeper, repeated keys
// refused, errors naming the subject and the byte, and wide input (100,000 keys, 200,000 values)
// taken in one linear pass.
#include <doctest/doctest.h>

#include <string>

#include "core/error.h"
#include "core/json.h"

namespace vkllm {
namespace {

using json = nlohmann::ordered_json;

std::string error_of(std::string_view text, int max_depth = max_json_depth) {
    try {
        (void)parse_json(text, "the body", max_depth);
    } catch (const Error& error) {
        return error.what();
    }
    return "";
}

TEST_CASE("the tree is nlohmann's, keys in the text's order") {
    const std::string text = R"({"z": 1, "a": [true, false, null, -7, 18446744073709551615, 2.5e-3, "s\u00e9\n"],
                                "m": {"y": {}, "b": []}, "e": ""})";
    const json parsed = parse_json(text, "the body");
    CHECK(parsed == json::parse(text));
    CHECK(parsed.dump() == json::parse(text).dump());
    std::string keys;
    for (const auto& [key, value] : parsed.items()) keys += key;
    CHECK(keys == "zame");
    CHECK(parsed["a"][4].is_number_unsigned());
    CHECK(parse_json("\"x\"", "s") == "x");
    CHECK(parse_json(" 5 ", "n") == 5);
}

TEST_CASE("nesting past the bound is refused before the tree is built that deep") {
    CHECK(error_of(std::string(64, '[') + std::string(64, ']')).empty());
    CHECK(error_of(std::string(65, '[') + std::string(65, ']')) == "the body nests JSON deeper than 64 levels");
    CHECK(error_of("{\"a\":" + std::string(100000, '[') + std::string(100000, ']') + "}") == "the body nests JSON deeper than 64 levels");
    CHECK(error_of(std::string(100000, '[')) == "the body nests JSON deeper than 64 levels");  // unclosed, too
    CHECK(error_of("[[[1]]]", 2) == "the body nests JSON deeper than 2 levels");
    CHECK_FALSE(try_parse_json(std::string(65, '[') + std::string(65, ']')));
    CHECK(try_parse_json("[[1]]")->at(0).at(0) == 1);
}

TEST_CASE("malformed text and repeated keys are refused naming the subject and what is wrong") {
    CHECK(error_of("{\"type\": ").starts_with("the body is not valid JSON at byte 10: syntax error while parsing value"));
    CHECK(error_of("[1] x").starts_with("the body is not valid JSON at byte 5: "));
    CHECK(error_of("[1e999]") == "the body is not valid JSON at byte 6: number overflow parsing '1e999'");
    CHECK(error_of("\"\xff\"").starts_with("the body is not valid JSON at byte 2: "));
    CHECK(error_of("").starts_with("the body is not valid JSON at byte 1: "));
    CHECK(error_of(R"({"a": 1, "b": {"c": 2, "c": 3}})") == "the body holds the key \"c\" twice in one object");
    std::string wide = "{";
    for (int i = 0; i < 20; ++i) wide += fmt::format("\"k{}\": {}, ", i, i);
    CHECK(error_of(wide + "\"k7\": 0}") == "the body holds the key \"k7\" twice in one object");
    CHECK(error_of(R"([{"a": 1}, {"a": 2}])").empty());  // one key in two objects
    CHECK_FALSE(try_parse_json("{"));
}

TEST_CASE("wide input is one linear pass: 100,000 keys in order, 200,000 empty objects") {
    std::string keys = "{";
    for (int i = 0; i < 100000; ++i) keys += fmt::format("{}\"{}\": {}", i ? ", " : "", 99999 - i, i);
    const json object = parse_json(keys + "}", "the body");
    REQUIRE(object.size() == 100000);
    CHECK(object.items().begin().key() == "99999");
    CHECK(object.back() == 99999);
    std::string objects = "[";
    for (int i = 0; i < 200000; ++i) objects += i ? ",{}" : "{}";
    const json array = parse_json(objects + "]", "the body");
    CHECK(array.size() == 200000);
    CHECK(array.back().is_object());
}

}  // namespace
}  // namespace vkllm
