// Constrained output from the command line on the bundled stories260K: --grammar and --json-schema
// hold for every seed, --logprobs sums to the log-probability eval's logits give, bad grammars and
// schemas are one line naming the option, and bench times decode freely and under a grammar.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "run_cli.h"
#include "test_main.h"

using vkllm::test::CliResult;
using vkllm::test::run_cli;

namespace {

const std::string model = std::string(VKLLM_SOURCE_DIR) + "/models/stories260K.gguf";

// An argument for the shell: single quotes, with any inside them closed and escaped.
std::string quoted(const std::string& text) {
    std::string out = "'";
    for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

}  // namespace

TEST_CASE("run --grammar: the text of every seed matches the grammar") {
    const std::string grammar = "root ::= \",\" [a-z ]{1,60} \".\"";
    const std::regex expected(R"(,[a-z ]{1,60}\.\n)");
    for (int seed = 1; seed <= 4; ++seed) {
        const CliResult result = run_cli("run -m " + model + " -p 'Once upon a time' --no-display-prompt -n 100 --temp 1 -s " +
                                         std::to_string(seed) + " --grammar " + quoted(grammar));
        CAPTURE(result.err);
        REQUIRE(result.exit_code == 0);
        CHECK_MESSAGE(std::regex_match(result.out, expected), result.out);
    }
}

TEST_CASE("run --json-schema: JSON valid under the schema, for every seed") {
    const std::string schema = R"({"type": "object", "properties": {"name": {"type": "string", "maxLength": 12},
        "age": {"type": "integer", "minimum": 1, "maximum": 99}, "pets": {"type": "array", "items": {"enum": ["cat", "dog"]},
        "maxItems": 2}}, "required": ["name", "age"]})";
    for (int seed = 1; seed <= 4; ++seed) {
        const CliResult result = run_cli("run -m " + model + " -p 'Lily' -n 200 --temp 1 --json -s " + std::to_string(seed) +
                                         " --json-schema " + quoted(schema));
        CAPTURE(result.err);
        REQUIRE(result.exit_code == 0);
        const nlohmann::json out = nlohmann::json::parse(result.out);
        CHECK(out["finish_reason"] == "stop");
        const std::string text = out["text"];
        CAPTURE(text);
        const nlohmann::json document = nlohmann::json::parse(text);
        CHECK(document["name"].get<std::string>().size() <= 12);
        CHECK(document["age"].get<int>() >= 1);
        CHECK(document["age"].get<int>() <= 99);
        if (document.contains("pets")) CHECK(document["pets"].size() <= 2);
        CHECK(document.size() == 2 + document.contains("pets"));
    }
}

TEST_CASE("run --logprobs: a reply's log-probabilities sum to the one eval's logits give") {
    const CliResult run = run_cli("run -m " + model + " -p 'Once upon a time' -n 24 --temp 1 -s 7 --json --logprobs 3");
    REQUIRE(run.exit_code == 0);
    const nlohmann::json out = nlohmann::json::parse(run.out);
    const CliResult tokenized = run_cli("tokenize -m " + model + " -p 'Once upon a time' --ids");
    REQUIRE(tokenized.exit_code == 0);
    std::vector<int> tokens = nlohmann::json::parse(tokenized.out);
    const size_t n_prompt = tokens.size();
    const std::vector<int> generated = out["tokens"];
    REQUIRE(generated.size() == out["logprobs"].size());
    REQUIRE(generated.size() > 4);
    tokens.insert(tokens.end(), generated.begin(), generated.end() - 1);
    std::string list;
    for (int id : tokens) list += fmt::format("{}{}", list.empty() ? "" : ",", id);
    const auto logits_path = std::filesystem::temp_directory_path() / "vkllm-logprobs-logits.f32";
    const CliResult eval = run_cli("eval -m " + model + " --tokens " + list + " --logits-out " + logits_path.string());
    REQUIRE(eval.exit_code == 0);
    const std::string bytes = vkllm::test::slurp(logits_path);
    std::filesystem::remove(logits_path);
    const size_t n_vocab = bytes.size() / sizeof(float) / tokens.size();
    REQUIRE(n_vocab == 512);
    double from_eval = 0, from_run = 0;
    for (size_t i = 0; i < generated.size(); ++i) {
        const float* row = reinterpret_cast<const float*>(bytes.data()) + (n_prompt - 1 + i) * n_vocab;
        double max = -INFINITY, sum = 0;
        for (size_t v = 0; v < n_vocab; ++v) max = std::max(max, double(row[v]));
        for (size_t v = 0; v < n_vocab; ++v) sum += std::exp(double(row[v]) - max);
        from_eval += double(row[generated[i]]) - max - std::log(sum);
        const nlohmann::json& entry = out["logprobs"][i];
        CHECK(entry["token"] == generated[i]);
        REQUIRE(entry["top"].size() == 3);
        CHECK(entry["top"][0]["logprob"].get<double>() >= entry["top"][1]["logprob"].get<double>());
        CHECK(entry["logprob"].get<double>() <= entry["top"][0]["logprob"].get<double>());
        from_run += entry["logprob"].get<double>();
    }
    // Decode (matvecs) and eval (matmuls) sum in different orders: 1e-4 a token, where a wrong row or
    // a tempered distribution would be off by whole units.
    CHECK(std::abs(from_run - from_eval) < 1e-4 * double(generated.size()));
}

TEST_CASE("grammar options: bad grammars, schemas and combinations are one line naming the option") {
    const auto error_of = [](const std::string& arguments) {
        const CliResult result = run_cli("run -m " + model + " -p x " + arguments);
        CHECK(result.exit_code == 1);
        CHECK(std::count(result.err.begin(), result.err.end(), '\n') == 1);
        return result.err;
    };
    CHECK(error_of("--grammar 'root ::= (\"a\"'") == "vkllm run: --grammar: grammar line 1, column 14 (rule 'root'): expected ')' "
                                                    "to close the group opened at line 1, column 10, found the end of the grammar\n");
    CHECK(error_of("--json-schema '{\"type\": \"strng\"}'") == "vkllm run: --json-schema: json schema at #: type 'strng' is not "
                                                             "one of object, array, string, number, integer, boolean and null\n");
    CHECK(error_of("--json-schema '{\"type\":'") == "vkllm run: --json-schema: json schema is not valid JSON at byte 9: syntax error "
                                                 "while parsing value - unexpected end of input; expected '[', '{', or a literal\n");
    CHECK(error_of("--grammar-file /nonexistent.gbnf").starts_with("vkllm run: --grammar-file /nonexistent.gbnf: "));
    CHECK(error_of("--grammar 'root ::= \"a\"' -j '{}'") == "vkllm run: give one of --grammar, --grammar-file, --json-schema "
                                                            "and --json-schema-file\n");
    CHECK(error_of("--grammar 'root ::= \"a\"' --ignore-eos") == "vkllm run: --ignore-eos cannot go with a grammar: the grammar "
                                                                 "decides where the text ends\n");
    CHECK(error_of("--logprobs 2") == "vkllm run: --logprobs needs --json, which prints them\n");
    CHECK(error_of("--logprobs 21 --json") == "vkllm run: --logprobs must be between 0 and 20 (or -1: off), not 21\n");
}

TEST_CASE("bench --json-schema times decode freely and under the grammar") {
    const CliResult result = run_cli("bench -m " + model + " -p 0 -n 16 -r 1 --json -j '{}'");
    CAPTURE(result.err);
    REQUIRE(result.exit_code == 0);
    const nlohmann::json out = nlohmann::json::parse(result.out);
    CHECK(out["tg_sampled"]["tok_s"].get<double>() > 0);
    CHECK(out["tg_grammar"]["tok_s"].get<double>() > 0);
    const nlohmann::json& grammar = out["tg_grammar"];
    CHECK(grammar["tokens_by_lazy_check"].get<int>() + grammar["tokens_by_cached_mask"].get<int>() +
              grammar["tokens_by_trie_walk"].get<int>() == 16);
    CHECK(grammar["grammar_share_of_decode"].is_number());
    const CliResult refused = run_cli("bench -m " + model + " -p 8 -n 0 -j '{}'");
    CHECK(refused.exit_code == 1);
    CHECK(refused.err == "vkllm bench: a grammar constrains generation, and -n 0 generates nothing\n");
}
