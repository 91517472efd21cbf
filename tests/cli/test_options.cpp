// The command line as a user meets it: --help on every command, --version, `vkllm help`, the
// llama.cpp flags, range checks on sampling values and the one-line errors of issue 18, each naming
// what the user typed. The model is the bundled stories260K (models/), so nothing is skipped.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "run_cli.h"
#include "test_main.h"

using vkllm::test::CliResult;
using vkllm::test::run_cli;

namespace {

const std::string model = std::string(VKLLM_SOURCE_DIR) + "/models/stories260K.gguf";

size_t lines(const std::string& text) { return size_t(std::count(text.begin(), text.end(), '\n')); }

// A failure: exit 1, one line on stderr that contains `expected`, nothing on stdout.
void check_error(const std::string& arguments, const std::string& expected) {
    CAPTURE(arguments);
    const CliResult result = run_cli(arguments);
    CAPTURE(result.err);
    CHECK(result.exit_code == 1);
    CHECK(lines(result.err) == 1);
    CHECK(result.err.find(expected) != std::string::npos);
    CHECK(result.out.empty());
}

std::vector<std::string> command_names() {
    const CliResult listing = run_cli("help");
    REQUIRE(listing.exit_code == 0);
    std::istringstream in(listing.out.substr(listing.out.find("commands:\n") + 10));
    std::vector<std::string> names;
    for (std::string line; std::getline(in, line) && line.starts_with("  ") && line[2] != '-';)
        names.push_back(line.substr(2, line.find(' ', 2) - 2));
    return names;
}

std::filesystem::path scratch(const std::string& name) { return std::filesystem::temp_directory_path() / name; }

}  // namespace

TEST_CASE("every command answers --help and -h with its usage and defaults, exit 0; vkllm help COMMAND is the same") {
    const std::vector<std::string> names = command_names();
    CHECK(names.size() >= 14);
    for (const std::string& name : names) {
        CAPTURE(name);
        const CliResult help = run_cli(name + " --help");
        CHECK(help.exit_code == 0);
        CHECK(help.out.starts_with("usage: vkllm " + name + " "));
        CHECK(help.out.find("-h, --help") != std::string::npos);
        CHECK(help.err.empty());
        CHECK(run_cli(name + " -h").out == help.out);
        CHECK(run_cli("help " + name).out == help.out);
    }
    CHECK(run_cli("run --help").out.find("--temp T") != std::string::npos);
    CHECK(run_cli("run --help").out.find("(default: 0.8)") != std::string::npos);
    CHECK(run_cli("synth --help").out.find("minimax-m3") != std::string::npos);
    CHECK(run_cli("help").out.find("--version") != std::string::npos);
    check_error("help no-such-command", "unknown command 'no-such-command'");
    check_error("no-such-command", "unknown command 'no-such-command'");
    CHECK(run_cli("").exit_code == 1);
}

TEST_CASE("--version names the version, the commit, the build type and the Vulkan headers") {
    const CliResult version = run_cli("--version");
    CHECK(version.exit_code == 0);
    CHECK(version.out.starts_with("vkllm "));
    CHECK(version.out.find("commit ") != std::string::npos);
    CHECK(version.out.find(" build") != std::string::npos);
    CHECK(version.out.find("Vulkan headers 1.") != std::string::npos);
    CHECK(lines(version.out) == 1);
}

TEST_CASE("each out-of-range sampling value is refused with one sentence naming the flag") {
    const std::string run = "run -m " + model + " -p Once ";
    check_error(run + "--temp nan", "--temp must be a finite number of at least 0");
    check_error(run + "--temp inf", "not inf");
    check_error(run + "--temp -1", "--temp must be a finite number");
    check_error(run + "--top-p 5", "--top-p must be above 0 and at most 1");
    check_error(run + "--top-p 0", "--top-p must be above 0");
    check_error(run + "--min-p 2", "--min-p must be between 0 and 1");
    check_error(run + "--repeat-penalty 0", "--repeat-penalty must be a finite number above 0");
    check_error(run + "--repeat-penalty -1", "--repeat-penalty must be");
    check_error(run + "--repeat-last-n -2", "--repeat-last-n must be at least -1");
    check_error(run + "--presence-penalty nan", "--presence-penalty must be a finite number");
    check_error(run + "--frequency-penalty inf", "--frequency-penalty must be a finite number");
    check_error(run + "--top-k -3", "--top-k must be at least 0");
    check_error(run + "--seed -2", "--seed must be -1");
    check_error(run + "--temp warm", "--temp expects a number, not 'warm'");
    check_error("chat -m " + model + " --top-p 1.5", "--top-p must be above 0");
}

TEST_CASE("llama-cli's flags: -s, --n-predict, -n -1 accepted, -ngl and -t noted once, --seed -1 draws a seed") {
    const std::string run = "run -m " + model + " -p Once --temp 0.8 ";
    const CliResult seeded = run_cli(run + "-s 7 --n-predict 12 --repeat-last-n -1 --presence-penalty 0.1 "
                                           "--frequency-penalty 0.1 -ngl 99 -t 4 -t 2");
    REQUIRE(seeded.exit_code == 0);
    CHECK(seeded.err.find("-ngl ignored") != std::string::npos);
    CHECK(seeded.err.find("-t ignored") != std::string::npos);
    CHECK(seeded.err.find("-t ignored", seeded.err.find("-t ignored") + 1) == std::string::npos);
    CHECK(run_cli(run + "--seed 7 -n 12 --repeat-last-n -1 --presence-penalty 0.1 --frequency-penalty 0.1").out ==
          seeded.out);

    // The default seed is drawn each run; --verbose prints it.
    const auto seed_of = [](const std::string& err) {
        const size_t at = err.find("sampling seed: ");
        return at == std::string::npos ? std::string() : err.substr(at, err.find('\n', at) - at);
    };
    const std::string first = seed_of(run_cli(run + "-n 4 --verbose").err), second = seed_of(run_cli(run + "-n 4 --verbose").err);
    CHECK(!first.empty());
    CHECK(first != second);
    CHECK(seed_of(run_cli(run + "-n 4 --verbose --seed 5").err) == "sampling seed: 5");
}

TEST_CASE("run reads its prompt from -f; --no-display-prompt prints only the generated text; --ignore-eos") {
    const auto prompt = scratch("vkllm-options-prompt.txt");
    std::ofstream(prompt) << "Once upon a time";
    const CliResult from_file = run_cli("run -m " + model + " -f " + prompt.string() + " -n 8 --temp 0");
    REQUIRE(from_file.exit_code == 0);
    CHECK(from_file.out.starts_with("Once upon a time"));
    const CliResult quiet = run_cli("run -m " + model + " -f " + prompt.string() + " -n 8 --temp 0 --no-display-prompt");
    REQUIRE(quiet.exit_code == 0);
    CHECK(from_file.out.ends_with(quiet.out));
    CHECK(!quiet.out.starts_with("Once upon a time"));
    check_error("run -m " + model + " -f " + prompt.string() + " -p Once", "give the prompt once");
    std::filesystem::remove(prompt);
    check_error("run -m " + model + " -f " + scratch("vkllm-no-such-prompt.txt").string(), "cannot open the prompt file");
    check_error("run -m " + model + " -f " + std::filesystem::temp_directory_path().string(), "is a directory");
    CHECK(run_cli("run -m " + model + " -p Once -n 8 --ignore-eos --temp 0").exit_code == 0);
}

TEST_CASE("the option parser's errors name the option and point at --help") {
    check_error("run -m " + model + " --no-such-flag", "unknown option '--no-such-flag'; see 'vkllm run --help'");
    check_error("run -m " + model + " -p", "-p needs a value (TEXT)");
    check_error("run -p Once", "--model FILE is required; see 'vkllm run --help'");
    check_error("run -m " + model + " -c many", "-c expects a whole number of at least 0, not 'many'");
    check_error("run -m " + model + " -n -2", "-n must be -1");
    check_error("run -m " + model + " --verbose=yes", "--verbose takes no value");
    check_error("run -m " + model + " stray", "unexpected argument 'stray'");
    check_error("devices --bogus", "unknown option '--bogus'");
    check_error("bench-ops --rows", "--rows needs a value");
    check_error("bench-ops --rows 0", "--rows must be at least 1");
    check_error("detokenize -m " + model + " 1 x", "'x' is not a token id");
    check_error("quantize in.gguf", "OUT.gguf is required");
    check_error("synth --arch llama -o x.gguf", "--arch llama needs --preset and --type");
}

TEST_CASE("report files are checked before any work: an unwritable --stats-json or --dump-graph fails first") {
    const std::string run = "run -m " + model + " -p Once -n 4 ";
    check_error(run + "--stats-json /no-such-folder/stats.json", "--stats-json /no-such-folder/stats.json: /no-such-folder is not an existing folder");
    check_error(run + "--dump-graph " + std::filesystem::temp_directory_path().string(), "--dump-graph");
    check_error(run + "--dump-graph " + model + "/graph.txt", "is not an existing folder");
}

TEST_CASE("images: --image without --mmproj, --mmproj without --image, a directory as --image") {
    const std::string run = "run -m " + model + " -p Once ";
    check_error(run + "--image cat.png", "--image cat.png needs --mmproj FILE");
    check_error(run + "--mmproj proj.gguf", "--mmproj proj.gguf needs at least one --image FILE");
    const std::filesystem::path vision = std::filesystem::path(VKLLM_SHARED_DIR) / "fixtures/vision/gemma3_vis";
    if (!vkllm::test::shared_path("fixtures/vision/gemma3_vis/mmproj.gguf")) return;
    const std::string folder = std::filesystem::temp_directory_path().string();
    check_error("run -m " + (vision / "model.gguf").string() + " --mmproj " + (vision / "mmproj.gguf").string() +
                    " --image " + folder + " -p 'Look: <__media__>' -n 1",
                folder + " is a directory, not the image file");
}

TEST_CASE("perplexity refuses a context too small to score anything; bench refuses -p 0 -n 0") {
    const auto text = scratch("vkllm-options-text.txt");
    std::ofstream(text) << "Once upon a time there was a little girl.";
    check_error("perplexity -m " + model + " -f " + text.string() + " -c 2", "-c 2 leaves no token to score");
    std::filesystem::remove(text);
    check_error("bench -m " + model + " -p 0 -n 0", "-p 0 -n 0 leaves nothing to time");
    check_error("bench -m " + model + " -r 0", "-r 0 runs nothing");
    check_error("bench -m " + model + " -n 0 --kv-fill 64", "--kv-fill 64 times the generation test");
    check_error("bench -m " + model + " --parallel 2 --kv-fill 64", "it needs -n N and no --parallel");
    check_error("bench -m " + model + " -o xml", "-o must be md or json");
    const CliResult json = run_cli("bench -m " + model + " -p 8 -n 4 -r 1 -o json");  // llama-bench's spelling
    REQUIRE(json.exit_code == 0);
    CHECK(nlohmann::json::parse(json.out)["tg"]["n"] == 4);
}

TEST_CASE("tokenize prints id -> piece as llama-tokenize does, --ids a list, --json id and piece") {
    const CliResult pieces = run_cli("tokenize -m " + model + " 'Once upon'");
    REQUIRE(pieces.exit_code == 0);
    CHECK(pieces.out.find(" -> '<s>'\n") != std::string::npos);
    CHECK(pieces.out.find(" -> ' upon'\n") != std::string::npos);
    const CliResult ids = run_cli("tokenize -m " + model + " --ids -p 'Once upon'");
    REQUIRE(ids.exit_code == 0);
    CHECK(ids.out.starts_with("[1, "));
    const CliResult json = run_cli("tokenize -m " + model + " --json 'Once upon'");
    REQUIRE(json.exit_code == 0);
    const auto tokens = nlohmann::json::parse(json.out);
    REQUIRE(tokens.size() == lines(pieces.out));
    CHECK(tokens[0]["id"] == 1);
    CHECK(tokens[0]["piece"] == "<s>");
    CHECK(tokens.back()["piece"] == " upon");
    CHECK(run_cli("tokenize -m " + model + " ''").out == "     1 -> '<s>'\n");  // an empty text is BOS alone
    check_error("tokenize -m " + model, "give the text once");
    check_error("tokenize -m " + model + " Once -p upon", "give the text once");
}

TEST_CASE("info --json holds the metadata and the tensors; arrays in full with --full") {
    const CliResult info = run_cli("info " + model + " --json");
    REQUIRE(info.exit_code == 0);
    const auto json = nlohmann::json::parse(info.out);
    CHECK(json["metadata"]["general.architecture"] == "llama");
    CHECK(json["metadata"]["tokenizer.ggml.tokens"]["count"] == 512);
    CHECK(json["tensors"].size() == 48);
    CHECK(json["tensors"][0].contains("shape"));
    const auto full = nlohmann::json::parse(run_cli("info " + model + " --json --full").out);
    CHECK(full["metadata"]["tokenizer.ggml.tokens"].size() == 512);
}
