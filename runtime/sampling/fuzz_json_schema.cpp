// libFuzzer entry for the JSON Schema converter (built with -DVKLLM_FUZZ=ON and clang; run by
// scripts/fuzz). Any JSON must convert or throw vkllm::Error, and what converts must be GBNF the
// parser takes: only its limits (size, left recursion from a schema that refers to itself before any
// text, more ways open at once than the matcher follows, a root no finite document matches) may
// refuse it. A crash, a sanitizer report, a hang or a syntax error is a bug. The seeds hold schemas
// at and past those limits (a $ref to itself, an object requiring itself, a wide enum, 4,500
// optional properties).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/error.h"
#include "sampling/json_schema.h"

using namespace vkllm::sampling;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    nlohmann::ordered_json schema;
    try {
        schema = parse_json_schema(std::string_view(reinterpret_cast<const char*>(data), size));
    } catch (const vkllm::Error&) {
        return 0;
    }
    for (bool strict : {true, false}) {
        std::string gbnf;
        try {
            gbnf = json_schema_to_gbnf(schema, {.strict = strict});
        } catch (const vkllm::Error&) {
            return 0;
        }
        try {
            Grammar::parse(gbnf);
        } catch (const vkllm::Error& error) {
            if (std::string_view(error.what()).starts_with("grammar line")) __builtin_trap();  // the converter wrote bad GBNF
        }
    }
    return 0;
}
