#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "run_cli.h"
#include "test_main.h"

using vkllm::test::run_cli;
using vkllm::test::slurp;

namespace {

const std::filesystem::path shared = VKLLM_SHARED_DIR;

}  // namespace

TEST_CASE("greedy decoding from BOS on stories260K prints the published text, replaying one recorded graph") {
    auto model = shared / "testdata/models/stories260K.gguf";
    if (!vkllm::test::shared_path("testdata/models/stories260K.gguf")) return;
    // The reference: 256 greedy steps after BOS, as llama2.c prints them.
    std::string reference = slurp(shared / "testdata/models/stories260K.greedy256.derived.txt");
    std::string expected = reference.substr(reference.find("text: ") + 6);
    auto stats = std::filesystem::temp_directory_path() / "vkllm-run-stats.json";
    auto result = run_cli("run -m " + model.string() + " -n 256 --temp 0 --stats-json " + stats.string());
    REQUIRE(result.exit_code == 0);
    CHECK(result.out == expected);
    CHECK(result.err.find("tok/s") != std::string::npos);
    auto json = nlohmann::json::parse(slurp(stats));
    CHECK(json["graphs_recorded"] == 1);
    CHECK(json["replays"] == 256);  // BOS and every generated token but the last, through one graph
    std::filesystem::remove(stats);
}

TEST_CASE("eval writes float32 logits of every position; bad input gives one line and exit code 1") {
    auto dir = shared / "fixtures/llama_f32";
    if (!vkllm::test::shared_path("fixtures/llama_f32")) return;
    auto out = std::filesystem::temp_directory_path() / "vkllm-eval-logits.f32";
    auto result = run_cli("eval -m " + (dir / "model.gguf").string() + " --tokens 1,5,9 --logits-out " + out.string());
    REQUIRE(result.exit_code == 0);
    CHECK(std::filesystem::file_size(out) == 3 * 512 * sizeof(float));
    std::filesystem::remove(out);

    auto bad_token = run_cli("eval -m " + (dir / "model.gguf").string() + " --tokens 1,99999 --logits-out " + out.string());
    CHECK(bad_token.exit_code == 1);
    CHECK(bad_token.err.find("outside the vocabulary") != std::string::npos);
    auto not_gguf = run_cli("eval -m " + (dir / "meta.json").string() + " --tokens 1 --logits-out " + out.string());
    CHECK(not_gguf.exit_code == 1);
    CHECK(std::count(not_gguf.err.begin(), not_gguf.err.end(), '\n') == 1);
}

TEST_CASE("chat answers each line through the chat template and reuses the cache of earlier turns") {
    auto model = shared / "testdata/models/stories260K.gguf";
    if (!vkllm::test::shared_path("testdata/models/stories260K.gguf")) return;
    auto directory = std::filesystem::temp_directory_path();
    auto chat_template = directory / "vkllm-chat-template.jinja", input = directory / "vkllm-chat-input.txt";
    auto stats = directory / "vkllm-chat-stats.json";
    std::ofstream(chat_template) << "{{ bos_token }}{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n"
                                    "{% endfor %}{% if add_generation_prompt %}assistant:{% endif %}";
    std::ofstream(input) << "Tell me a story\nAnother one\n";
    auto result = run_cli("chat -m " + model.string() + " -n 12 --temp 0 --chat-template-file " + chat_template.string() +
                              " --stats-json " + stats.string(),
                          "", input.string());
    REQUIRE(result.exit_code == 0);
    CHECK(std::count(result.out.begin(), result.out.end(), '\n') == 2);  // one reply per line
    auto json = nlohmann::json::parse(slurp(stats));
    // Two turns of 12 tokens; the second turn's prompt reruns only what follows the first's.
    CHECK(json["replays"].get<int>() < 2 * 12 + 2 * 20);
    for (auto& path : {chat_template, input, stats}) std::filesystem::remove(path);
}

TEST_CASE("chat with an image answers as run does on the same prompt, and takes a second turn") {
    auto fixture = shared / "fixtures/vision/pixtral_vis";
    if (!vkllm::test::shared_path("fixtures/vision/pixtral_vis/model.gguf")) return;
    auto directory = std::filesystem::temp_directory_path();
    auto chat_template = directory / "vkllm-chat-media-template.jinja", input = directory / "vkllm-chat-media-input.txt";
    std::ofstream(chat_template) << "{{ bos_token }}{% for m in messages %}{{ m['content'] }}{% endfor %}";
    std::ofstream(input) << "Once upon a time there was a little cat.\nThe cat\n";
    const std::string model_and_image = "-m " + (fixture / "model.gguf").string() + " --mmproj " +
                                        (fixture / "mmproj.gguf").string() + " --image " + (fixture / "chelsea.png").string();
    // The image goes before the first turn's text, as if the prompt began with the media marker.
    auto chat = run_cli("chat " + model_and_image + " -n 8 --temp 0 --chat-template-file " + chat_template.string(), "",
                        input.string());
    auto run = run_cli("run " + model_and_image + " -n 8 --temp 0 -p \"<__media__>Once upon a time there was a little cat.\"");
    REQUIRE(chat.exit_code == 0);
    REQUIRE(run.exit_code == 0);
    // run echoes its prompt, then the generated text and a newline; chat prints each reply and a newline.
    const std::string prompt = "<__media__>Once upon a time there was a little cat.";
    REQUIRE(run.out.starts_with(prompt));
    const std::string generated = run.out.substr(prompt.size(), run.out.size() - prompt.size() - 1);
    CHECK(!generated.empty());
    CHECK(chat.out.starts_with(generated + "\n"));
    CHECK(chat.out.size() >= generated.size() + 2);  // the second turn's reply follows
    for (auto& path : {chat_template, input}) std::filesystem::remove(path);
}

TEST_CASE("an 8-bit KV cache runs and still tells the story's start") {
    auto model = shared / "testdata/models/stories260K.gguf";
    if (!vkllm::test::shared_path("testdata/models/stories260K.gguf")) return;
    auto result = run_cli("run -m " + model.string() + " -n 12 --temp 0 --kv-type q8_0");
    REQUIRE(result.exit_code == 0);
    CHECK(result.out.starts_with("Once upon a time, there was a little girl"));
}

TEST_CASE("bench --json reports prompt and generation speed with the decode accounting and both profiles") {
    auto model = shared / "testdata/models/stories260K.gguf";
    if (!vkllm::test::shared_path("testdata/models/stories260K.gguf")) return;
    auto result = run_cli("bench -m " + model.string() + " -p 16 -n 8 -r 2 --json");
    REQUIRE(result.exit_code == 0);
    auto json = nlohmann::json::parse(result.out);
    CHECK(!json["device"].get<std::string>().empty());
    CHECK(json["pp"]["n"] == 16);
    CHECK(json["pp"]["tok_s"].get<double>() > 0);
    CHECK(json["tg"]["n"] == 8);
    CHECK(json["tg"]["tok_s"].get<double>() > 0);
    const auto& decode = json["decode"];
    CHECK(decode["dispatches_per_token"].get<int>() > 0);
    // Every weight but the embedding table (one row of it is read) streams once per token.
    CHECK(decode["weight_bytes_per_token"].get<uint64_t>() < json["weight_bytes"].get<uint64_t>());
    CHECK(decode["gpu_ms_by_op"].contains("attn"));
    // The prompt's profile replays its chunk's graph: its matmuls and prefill attention.
    const auto& prompt_ms = json["pp"]["gpu_ms_by_op"];
    CHECK(prompt_ms.contains("attn"));
    CHECK(prompt_ms.contains("ffn_down"));
    CHECK(json["pp"]["gpu_ms_by_op_from"].get<std::string>().find("16 tokens") != std::string::npos);
}

TEST_CASE("bench --kv-fill times decode at that context and prints the per-op table with its rows") {
    const std::string model = std::string(VKLLM_SOURCE_DIR) + "/models/stories260K.gguf";
    auto result = run_cli("bench -m " + model + " -p 0 -n 4 -r 1 --kv-fill 200");
    REQUIRE(result.exit_code == 0);
    CHECK(result.out.find("decode after --kv-fill 200: a context of 200 tokens") != std::string::npos);
    const size_t table = result.out.find("| op (decode, one token");
    REQUIRE(table != std::string::npos);
    // After the header and the |---| line, one row per kind of pass (attention, projections, output...).
    std::vector<std::string> rows;
    std::istringstream lines(result.out.substr(table));
    std::string line;
    std::getline(lines, line);
    std::getline(lines, line);
    while (std::getline(lines, line) && line.starts_with("| ")) rows.push_back(line);
    CHECK(rows.size() >= 5);
    CHECK(std::ranges::count_if(rows, [](const std::string& row) { return row.starts_with("| attn |"); }) == 1);
    auto json = run_cli("bench -m " + model + " -p 0 -n 4 -r 1 --kv-fill 200 --json");
    REQUIRE(json.exit_code == 0);
    const auto report = nlohmann::json::parse(json.out);
    CHECK(report["kv_fill"] == 200);
    CHECK(report["decode"]["gpu_ms_by_op"].size() == rows.size());
    CHECK(report["decode"]["gpu_ms_by_op"]["attn"].get<double>() > 0);
}

TEST_CASE("perplexity: low on the model's own greedy story, high on its words shuffled; short text refused") {
    auto model = shared / "testdata/models/stories260K.gguf";
    if (!vkllm::test::shared_path("testdata/models/stories260K.gguf")) return;
    std::string reference = slurp(shared / "testdata/models/stories260K.greedy256.derived.txt");
    std::string story = reference.substr(reference.find("text: ") + 6);
    std::vector<std::string> words;
    for (size_t at = 0; at < story.size();) {
        size_t end = std::min(story.find_first_of(" \n", at), story.size());
        if (end > at) words.push_back(story.substr(at, end - at));
        at = end + 1;
    }
    // A fixed derangement: every 7th word of a rotation, so no word keeps its neighbours.
    std::string shuffled;
    for (size_t i = 0; i < 2 * words.size(); ++i) shuffled += words[(i * 7 + 3) % words.size()] + " ";
    auto directory = std::filesystem::temp_directory_path();
    auto story_path = directory / "vkllm-ppl-story.txt", shuffled_path = directory / "vkllm-ppl-shuffled.txt";
    std::ofstream(story_path) << story << story;
    std::ofstream(shuffled_path) << shuffled;
    auto final_ppl = [](const std::string& out) { return std::stod(out.substr(out.find("PPL = ") + 6)); };

    auto on_story = run_cli("perplexity -m " + model.string() + " -f " + story_path.string() + " -c 128");
    REQUIRE(on_story.exit_code == 0);
    CHECK(final_ppl(on_story.out) < 3.0);
    auto on_shuffled = run_cli("perplexity -m " + model.string() + " -f " + shuffled_path.string() + " -c 128");
    REQUIRE(on_shuffled.exit_code == 0);
    CHECK(final_ppl(on_shuffled.out) > 30.0);
    auto too_short = run_cli("perplexity -m " + model.string() + " -f " + story_path.string() + " -c 4096");
    CHECK(too_short.exit_code == 1);
    CHECK(too_short.err.find("needs at least 8192") != std::string::npos);
    std::filesystem::remove(story_path);
    std::filesystem::remove(shuffled_path);
}

TEST_CASE("bench-ops --only arithmetic reports the int8 dot-product ceiling exactly where the device has it") {
    auto devices = run_cli("devices --json");
    REQUIRE(devices.exit_code == 0);
    auto json = nlohmann::json::parse(devices.out);
    const bool integer_dot_product = json["devices"][json["chosen"].get<size_t>()]["integer_dot_product"];
    auto result = run_cli("bench-ops --only arithmetic --type q8_0 --rows 256 --cols 256 --repeat 1");
    REQUIRE(result.exit_code == 0);
    CHECK(result.out.find("arithmetic ceiling: f32 FMA") != std::string::npos);
    CHECK((result.out.find("int8 dot") != std::string::npos) == integer_dot_product);
    CHECK(result.out.find("matmul_q8_0") != std::string::npos);
}
