// Embeddings (engine/embeddings.h): a BERT of random weights, written by `vkllm synth --arch bert`
// with llama.cpp's bge WordPiece vocabulary, against llama.cpp's embeddings of the same texts on the
// same file (tests/data/bert_embeddings, made by tools/peer-embeddings); and pooled hidden states of
// the bundled decoder model, checked through its own output head; a run stopped between inputs.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "../cli/run_cli.h"
#include "core/error.h"
#include "engine/embeddings.h"
#include "engine/engine.h"
#include "gguf/quants.h"
#include "test_main.h"

namespace vkllm::engine {
namespace {

using Inputs = std::vector<std::vector<tokenizer::TokenId>>;

const std::filesystem::path data_dir = std::filesystem::path(VKLLM_SOURCE_DIR) / "tests/data/bert_embeddings";

std::string stories_path() { return (std::filesystem::path(VKLLM_SOURCE_DIR) / "models/stories260K.gguf").string(); }

// The BERT fixture with the given pooling, written once per run (synth is deterministic in its seed:
// tests/data/bert_embeddings/README.md), or nullopt without ../shared's vocabulary.
std::optional<std::string> bert_fixture(const std::string& pooling) {
    const auto vocab = test::shared_path("testdata/tokenizer/llamacpp/ggml-vocab-bert-bge.gguf");
    if (!vocab) return std::nullopt;
    const auto dir = std::filesystem::temp_directory_path() / ("vkllm-embeddings-" + std::to_string(getpid()));
    if (std::filesystem::create_directories(dir))
        test::end_of_run_checks().push_back([dir] {
            std::filesystem::remove_all(dir);
            return 0;
        });
    const std::string path = (dir / ("bert-tiny-" + pooling + ".gguf")).string();
    if (!std::filesystem::exists(path)) {
        const test::CliResult synth = test::run_cli("synth --arch bert --preset tiny --type f32 --seed 1 --pooling " +
                                                    pooling + " --vocab " + vocab->string() + " -o " + path);
        INFO(synth.err);
        REQUIRE(synth.exit_code == 0);
    }
    return path;
}

struct Reference {
    std::vector<std::string> texts;
    std::vector<std::vector<tokenizer::TokenId>> tokens;
    std::vector<std::vector<float>> vectors;  // as llama.cpp returned them
};

Reference read_reference(const std::string& name) {
    std::ifstream in(data_dir / name);
    REQUIRE(in);
    const nlohmann::json json = nlohmann::json::parse(in);
    Reference reference;
    for (const nlohmann::json& entry : json.at("texts")) {
        reference.texts.push_back(entry.at("text"));
        reference.tokens.push_back(entry.at("tokens"));
        reference.vectors.push_back(entry.at("embedding"));
    }
    return reference;
}

std::vector<float> normalized(std::vector<float> v) {
    double sum = 0;
    for (float x : v) sum += double(x) * x;
    for (float& x : v) x = float(x / std::sqrt(sum));
    return v;
}

double length(const std::vector<float>& v) {
    double sum = 0;
    for (float x : v) sum += double(x) * x;
    return std::sqrt(sum);
}

double cosine(const std::vector<float>& a, const std::vector<float>& b) {
    double dot = 0;
    for (size_t i = 0; i < a.size(); ++i) dot += double(a[i]) * b[i];
    return dot / (length(a) * length(b));
}

float max_abs_difference(const std::vector<float>& a, const std::vector<float>& b) {
    REQUIRE(a.size() == b.size());
    float most = 0;
    for (size_t i = 0; i < a.size(); ++i) most = std::max(most, std::fabs(a[i] - b[i]));
    return most;
}

// The largest relative RMS difference between the rows of `a` and `b` (rows of `width` values), the
// measure two vkllm runs are compared by (../shared/fixtures/README.md).
double worst_row_relative_rms(const std::vector<float>& a, const std::vector<float>& b, size_t width) {
    REQUIRE(a.size() == b.size());
    double worst = 0;
    for (size_t row = 0; row < a.size() / width; ++row) {
        double error = 0, norm = 0;
        for (size_t i = row * width; i < (row + 1) * width; ++i) {
            error += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
            norm += double(b[i]) * b[i];
        }
        worst = std::max(worst, std::sqrt(error / norm));
    }
    return worst;
}

}  // namespace

TEST_CASE("BERT embeddings match llama.cpp's on the synth fixture, mean and cls pooling") {
    for (const char* pooling : {"mean", "cls"}) {
        CAPTURE(pooling);
        const auto path = bert_fixture(pooling);
        if (!path) return;
        const Reference reference = read_reference(std::string(pooling) + ".json");
        Engine engine({.model_path = *path});
        CHECK(engine.info().encoder);
        Embedder embedder(engine);
        CHECK(pooling_name(embedder.pooling()) == pooling);
        REQUIRE(embedder.dimension() == 128);
        Inputs inputs;
        for (const std::string& text : reference.texts) inputs.push_back(embedder.tokenize(text));
        CHECK(inputs == reference.tokens);
        const std::vector<std::vector<float>> vectors = embedder.embed(reference.texts);
        Embedder raw(engine, {.normalize = false});
        const std::vector<std::vector<float>> unnormalized = raw.embed(inputs);
        for (size_t i = 0; i < vectors.size(); ++i) {
            CAPTURE(reference.texts[i]);
            // llama.cpp returns the pooled state as it is; vkllm normalizes it as llama.cpp's embeddings output.
            const std::vector<float> expected = normalized(reference.vectors[i]);
            CHECK(std::fabs(length(vectors[i]) - 1.0) < 1e-6);
            CHECK(max_abs_difference(vectors[i], expected) < 1e-3f);
            CHECK(cosine(vectors[i], expected) >= 0.9999);
            CHECK(max_abs_difference(unnormalized[i], reference.vectors[i]) < 1e-3f * float(length(reference.vectors[i])));
        }
        // Each input alone, in any company: the same vectors.
        const std::vector<std::vector<float>> reversed = embedder.embed(Inputs(inputs.rbegin(), inputs.rend()));
        for (size_t i = 0; i < vectors.size(); ++i) CHECK(reversed[vectors.size() - 1 - i] == vectors[i]);
    }
}

TEST_CASE("an encoder refuses logits, a context past its positions, and inputs longer than its context") {
    const auto path = bert_fixture("mean");
    if (!path) return;
    CHECK_THROWS_WITH_AS(Engine({.model_path = *path, .n_ctx = 1024}), doctest::Contains("positions"), Error);
    Engine engine({.model_path = *path, .n_ctx = 16});
    const int32_t token = 101;
    CHECK_THROWS_WITH_AS(engine.session().eval(std::span(&token, 1)), doctest::Contains("encoder"), Error);
    Embedder embedder(engine);
    CHECK(embedder.max_tokens() == 16);
    const std::vector<tokenizer::TokenId> long_input(17, 1996);
    CHECK_THROWS_WITH_AS(embedder.embed(Inputs{{101, 102}, long_input}),
                         doctest::Contains("input 1 has 17 tokens, more than the context of 16"), Error);
    CHECK_THROWS_WITH_AS(embedder.embed(Inputs{{}}),
                         doctest::Contains("input 0 has no tokens"), Error);
    const std::string outside = "input 1: token id " + std::to_string(engine.info().n_vocab) + " is outside the vocabulary";
    CHECK_THROWS_WITH_AS(embedder.embed(Inputs{{101, 102}, {101, int32_t(engine.info().n_vocab)}}),
                         doctest::Contains(outside.c_str()), Error);
    CHECK(embedder.embed(Inputs{std::vector<tokenizer::TokenId>(16, 1996)}).size() == 1);
}

TEST_CASE("vkllm embed prints the engine's vectors, one per line of the text") {
    const auto path = bert_fixture("mean");
    if (!path) return;
    const auto texts = std::filesystem::path(*path).parent_path() / "texts.txt";
    std::ofstream(texts) << "Hello world\nnaïve café\n";
    const test::CliResult result = test::run_cli("embed -m " + *path + " -f " + texts.string() + " --json");
    INFO(result.err);
    REQUIRE(result.exit_code == 0);
    const nlohmann::json json = nlohmann::json::parse(result.out);
    CHECK(json.at("pooling") == "mean");
    CHECK(json.at("dimension") == 128);
    REQUIRE(json.at("data").size() == 2);
    Engine engine({.model_path = *path});
    Embedder embedder(engine);
    const auto vectors = embedder.embed(std::vector<std::string>{"Hello world", "naïve café"});
    for (size_t i = 0; i < 2; ++i) {
        CHECK(json.at("data")[i].at("tokens") == embedder.tokenize(i == 0 ? "Hello world" : "naïve café").size());
        CHECK(max_abs_difference(json.at("data")[i].at("embedding").get<std::vector<float>>(), vectors[i]) == 0.0f);
    }
    std::ofstream(texts) << "a\nb\nc";
    const test::CliResult text = test::run_cli("embed -m " + *path + " -f " + texts.string() + " --pooling cls");
    CHECK(text.exit_code == 0);
    CHECK(text.out.find("embedding 2:") != std::string::npos);
    CHECK(text.out.find("cosine similarity matrix:") != std::string::npos);
    const test::CliResult bad = test::run_cli("embed -m " + *path + " -p x --pooling max");
    CHECK(bad.exit_code == 1);
    CHECK(bad.err == "vkllm embed: unknown pooling 'max'; poolings: mean, cls, last\n");
}

TEST_CASE("pooled embeddings of a decoder model are deterministic, normalized and independent of the batch") {
    Engine engine({.model_path = stories_path(), .n_ctx = 256});
    Embedder last(engine);
    CHECK(last.pooling() == Pooling::Last);  // stories260K has no pooling_type: a decoder's default
    const std::vector<std::string> texts = {"Once upon a time", "The little dog ran to the park and played all day",
                                            "Lily", "She was happy."};
    const auto vectors = last.embed(texts);
    REQUIRE(vectors.size() == texts.size());
    for (const std::vector<float>& v : vectors) {
        CHECK(v.size() == engine.info().n_embd);
        CHECK(std::fabs(length(v) - 1.0) < 1e-6);
    }
    CHECK(last.embed(texts) == vectors);
    const auto reordered = last.embed(std::vector<std::string>{texts[3], texts[1], texts[1], texts[0]});
    CHECK(reordered[0] == vectors[3]);
    CHECK(reordered[1] == vectors[1]);
    CHECK(reordered[2] == vectors[1]);
    CHECK(reordered[3] == vectors[0]);
    CHECK(last.embed(std::vector<std::string>{texts[2]})[0] == vectors[2]);

    // The last token's state through the output head is the logits eval computes after it.
    Embedder raw(engine, {.pooling = Pooling::Last, .normalize = false});
    const std::vector<tokenizer::TokenId> tokens = raw.tokenize(texts[1]);
    const std::vector<float> hidden = raw.embed(Inputs{tokens})[0];
    const gguf::File file = gguf::File::open(stories_path());
    const gguf::Tensor* head = file.find_tensor("output.weight");
    const std::vector<float> output = gguf::dequantize(head ? *head : file.tensor("token_embd.weight"));
    engine.session().truncate(0);
    const std::span<const float> logits = engine.session().eval(tokens);
    const uint32_t n_embd = engine.info().n_embd;
    float most = 0;
    for (uint32_t v = 0; v < engine.info().n_vocab; ++v) {
        double dot = 0;
        for (uint32_t i = 0; i < n_embd; ++i) dot += double(output[uint64_t(v) * n_embd + i]) * hidden[i];
        most = std::max(most, float(std::fabs(dot - logits[v])));
    }
    CHECK(most < 1e-4f);

    // An input longer than a prompt chunk runs in chunks, as a prompt does: the same states, up to the
    // rounding of the projections (matvec for chunks of 8, matmul for the whole), where a K or V value
    // a rounding step from its neighbour takes the other f16 value in the cache that every later
    // position reads (3.9e-4 with the nvidia profile's kernels; test_mistral4 says the same of MLA).
    const std::vector<tokenizer::TokenId> story = last.tokenize(
        "Once upon a time there was a little girl named Lily who loved to play outside in the sun with her dog.");
    REQUIRE(story.size() > 16);
    model::Session chunked(engine.device(), engine.model(), {.n_ctx = 256, .n_ubatch = 8});
    std::vector<float> in_chunks, whole;
    chunked.eval_hidden(0, story, in_chunks);
    engine.session().truncate(0);
    engine.session().eval_hidden(0, story, whole);
    CHECK(in_chunks.size() == story.size() * n_embd);
    // Chunks of 8 take the matvec kernels and the whole input the matmul ones; on GPUs (slices) they sum
    // in different orders, and a last-bit difference in a key can round to another f16 in the cache:
    // the tolerance of runs through different projection kernels (test_batch, n_ubatch 1), far under
    // what a wrong state would give.
    CHECK(worst_row_relative_rms(in_chunks, whole, n_embd) < 3e-4);

    Embedder mean(engine, {.pooling = Pooling::Mean});
    const std::vector<float> mean_vector = mean.embed(Inputs{story})[0];
    CHECK(std::fabs(length(mean_vector) - 1.0) < 1e-6);
    CHECK(cosine(mean_vector, last.embed(Inputs{story})[0]) < 0.9999);
    CHECK(engine.session().n_past(0) == 0);  // embed leaves its sequence empty
}

TEST_CASE("embedding stops before the next input once asked, with the vectors done so far") {
    Engine engine({.model_path = stories_path(), .n_ctx = 64});
    Embedder embedder(engine);
    const Inputs inputs = {embedder.tokenize("Once upon a time"), embedder.tokenize("The little dog"),
                           embedder.tokenize("Lily"), embedder.tokenize("She was happy.")};
    const auto all = embedder.embed(inputs);
    int asked = 0;
    const auto first_two = embedder.embed(inputs, [&] { return ++asked > 2; });
    CHECK(asked == 3);
    REQUIRE(first_two.size() == 2);
    CHECK(first_two[0] == all[0]);
    CHECK(first_two[1] == all[1]);
    CHECK(engine.session().n_past(0) == 0);  // the sequence is left empty, as after a whole run
    CHECK(embedder.embed(inputs, [] { return true; }).empty());
    CHECK(embedder.embed(inputs, [] { return false; }) == all);
}

}  // namespace vkllm::engine
