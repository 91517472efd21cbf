// bench_parse: what hostile-but-valid request bodies cost to parse, and wide schemas and grammars to
// compile, on the host. Each JSON shape is about 2 MB (core/json.h's parser, as the server parses
// bodies and re-parses tool-call arguments); each schema or grammar is converted and parsed as a
// request's would be, failing or not (the outcome is printed). Reports milliseconds, best of 3, of
// wall-clock time and of this thread's CPU time (the figure a loaded machine does not inflate).
// Usage: bench_parse
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>

#include <time.h>

#include <fmt/format.h>

#include "core/error.h"
#include "core/json.h"
#include "sampling/json_schema.h"

using namespace vkllm;
using Clock = std::chrono::steady_clock;

namespace {

constexpr size_t body_bytes = 2u << 20;

// `item` (with {} the item's number) repeated between an opening and a closing until the whole is about
// body_bytes.
std::string repeated(std::string_view open, std::string_view item, std::string_view separator, std::string_view close) {
    std::string text(open);
    for (size_t i = 0; text.size() + item.size() + close.size() < body_bytes; ++i)
        text += std::string(i ? separator : "") + fmt::format(fmt::runtime(item), i);
    return text + std::string(close);
}

double thread_cpu_ms() {
    timespec now{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
    return double(now.tv_sec) * 1e3 + double(now.tv_nsec) * 1e-6;
}

// Of three runs: the best wall-clock and CPU milliseconds, and what the last one said (ok or its error).
void report(std::string_view what, size_t bytes, const std::function<void()>& work) {
    double best_wall = 1e30, best_cpu = 1e30;
    std::string outcome;
    for (int run = 0; run < 3; ++run) {
        const auto start = Clock::now();
        const double cpu_start = thread_cpu_ms();
        try {
            work();
            outcome = "ok";
        } catch (const Error& error) {
            outcome = error.what();
        }
        best_cpu = std::min(best_cpu, thread_cpu_ms() - cpu_start);
        best_wall = std::min(best_wall, std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    }
    if (outcome.size() > 90) outcome = outcome.substr(0, 87) + "...";
    fmt::print("{:<46} {:>9} B {:>8.1f} ms {:>8.1f} ms cpu  {}\n", what, bytes, best_wall, best_cpu, outcome);
}

void json_shape(std::string_view what, const std::string& text) {
    report(what, text.size(), [&] { (void)parse_json(text, "the body"); });
}

void schema(std::string_view what, const std::string& text) {
    report(what, text.size(), [&] { (void)sampling::json_schema_grammar(sampling::parse_json_schema(text)); });
}

void grammar(std::string_view what, const std::string& text) {
    report(what, text.size(), [&] { (void)sampling::Grammar::parse(text); });
}

std::string properties(int n, bool required) {
    std::string members, names;
    for (int i = 0; i < n; ++i) {
        members += fmt::format("{}\"p{}\": {{\"type\": \"integer\"}}", i ? ", " : "", i);
        names += fmt::format("{}\"p{}\"", i ? ", " : "", i);
    }
    return fmt::format("{{\"type\": \"object\", \"properties\": {{{}}}{}}}", members, required ? ", \"required\": [" + names + "]" : "");
}

}  // namespace

int main() {
    fmt::print("JSON bodies of about {} bytes (core/json.h)\n", body_bytes);
    json_shape("array of {}", repeated("[", "{{}}", ",", "]"));
    json_shape("array of 1-digit numbers", repeated("[", "7", ",", "]"));
    json_shape("object of 100k+ keys", repeated("{", "\"k{}\":1", ",", "}"));
    json_shape("logit_bias of 100k+ entries", repeated("{\"logit_bias\":{", "\"{}\":-1", ",", "}}"));
    json_shape("messages of one letter", repeated("{\"messages\":[", "{{\"role\":\"user\",\"content\":\"a\"}}", ",", "]}"));
    json_shape("one long string", "\"" + std::string(body_bytes, 'x') + "\"");
    json_shape("string of \\u escapes", repeated("\"", "\\u00e9", "", "\""));
    json_shape("arrays 64 deep, repeated", repeated("[", std::string(63, '[') + std::string(63, ']'), ",", "]"));
    json_shape("100,000 deep (refused)", std::string(100000, '[') + std::string(100000, ']'));
    std::string arguments = "{\"a\":" + std::string(100000, '[') + std::string(100000, ']') + "}";
    json_shape("tool-call arguments 100,000 deep (refused)", arguments);

    fmt::print("\nJSON schemas, converted and parsed as a request's\n");
    schema("1,000 optional properties", properties(1000, false));
    schema("10,000 optional properties (refused)", properties(10000, false));
    schema("20,000 required properties", properties(20000, true));
    schema("100,000 required properties (refused)", properties(100000, true));
    std::string values;
    for (int i = 0; i < 8000; ++i) values += fmt::format("{}\"v{}\"", i ? "," : "", i);
    schema("enum of 8,000 (refused)", "{\"enum\": [" + values + "]}");
    std::string branches;
    for (int i = 0; i < 50000; ++i) branches += fmt::format("{}{{\"const\":{}}}", i ? "," : "", i);
    schema("anyOf of 50,000 (refused)", "{\"anyOf\": [" + branches + "]}");

    fmt::print("\nGBNF grammars\n");
    grammar("(\"a\"{0,100000}){0,100000} (refused)", "root ::= (\"a\"{0,100000}){0,100000}");
    std::string alternatives = "root ::= \"x0\"";
    for (int i = 1; i < 8000; ++i) alternatives += fmt::format(" | \"x{}\"", i);
    grammar("8,000 alternatives (refused)", alternatives);
    std::string optional = "root ::=";
    for (int i = 0; i < 70000; ++i) optional += " \"a\"?";
    grammar("\"a\"? 70,000 times (refused)", optional);
    std::string chain = "root ::= r0\n";
    for (int i = 0; i < 100000; ++i) chain += fmt::format("r{} ::= \"a\" r{}\n", i, i + 1);
    grammar("100,000 rules in a chain, callee last", chain + "r100000 ::= \"c\"\n");
    return 0;
}
