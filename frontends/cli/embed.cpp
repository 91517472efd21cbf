// vkllm embed -m MODEL (-p TEXT | -f FILE) [--pooling mean|cls|last] [--json]: the embedding of each
// line of the text, as llama-embedding prints them (engine/embeddings.h).
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/file.h"
#include "engine/embeddings.h"
#include "model_options.h"

namespace vkllm::cli {
namespace {

// Each line an input, as llama-embedding splits its prompt; the empty line after a final newline is none.
std::vector<std::string> split_lines(std::string text) {
    if (text.ends_with('\n')) text.pop_back();
    std::vector<std::string> lines;
    size_t start = 0;
    for (size_t end; (end = text.find('\n', start)) != std::string::npos; start = end + 1)
        lines.push_back(text.substr(start, end - start));
    lines.push_back(text.substr(start));
    return lines;
}

float cosine(const std::vector<float>& a, const std::vector<float>& b) {
    double dot = 0, aa = 0, bb = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        dot += double(a[i]) * b[i];
        aa += double(a[i]) * a[i];
        bb += double(b[i]) * b[i];
    }
    return aa > 0 && bb > 0 ? float(dot / std::sqrt(aa * bb)) : 0.0f;
}

}  // namespace

int embed(Args args) {
    ModelOptions options;
    std::string prompt, file, pooling;
    bool no_normalize = false, json = false;
    Options parser("embed", "-m MODEL (-p TEXT | -f FILE) [--pooling mean|cls|last] [--json] [options]",
                   "The embedding of each line of the text: the model's hidden states pooled as its GGUF says (none "
                   "given: mean for BERT, the last token for decoder models) and L2-normalized, as llama-embedding "
                   "prints them; with several lines, their cosine similarities too.");
    parser.add("-p,--prompt", prompt, "TEXT", "the text, one input per line")
        .add("-f,--file", file, "FILE", "read the text from a file, one input per line")
        .add("--pooling", pooling, "mean|cls|last", "pool this way instead of as the model says")
        .flag("--no-normalize", no_normalize, "leave the vectors as pooled, not scaled to length 1")
        .flag("--json", json, "print {\"data\": [{\"index\", \"tokens\", \"embedding\"}], ...} as one object");
    options.declare(parser);
    if (!parser.parse(args)) return 0;
    options.check();
    if (parser.given("-p") == parser.given("-f")) fail("give the text once: with -p TEXT or with -f FILE");
    if (!options.dump_graph_path.empty() || !options.stats_json_path.empty())
        fail("embed runs no decode graph: --dump-graph and --stats-json are for run, chat, eval and bench");
    engine::EmbeddingOptions embedding{.normalize = !no_normalize};
    if (!pooling.empty()) embedding.pooling = engine::parse_pooling(pooling);
    const std::vector<std::string> texts = split_lines(parser.given("-f") ? read_text_file(file, "text file") : prompt);

    std::unique_ptr<engine::Engine> engine = open_engine(options);
    engine::Embedder embedder(*engine, embedding);
    std::vector<std::vector<tokenizer::TokenId>> inputs;
    for (const std::string& text : texts) inputs.push_back(embedder.tokenize(text));
    const std::vector<std::vector<float>> vectors = embedder.embed(inputs);

    if (json) {
        nlohmann::json data = nlohmann::json::array();
        for (size_t i = 0; i < vectors.size(); ++i)
            data.push_back({{"object", "embedding"}, {"index", i}, {"tokens", inputs[i].size()}, {"embedding", vectors[i]}});
        const nlohmann::json out = {{"object", "list"}, {"model", engine->info().name},
                                    {"pooling", engine::pooling_name(embedder.pooling())},
                                    {"normalized", !no_normalize}, {"dimension", embedder.dimension()}, {"data", data}};
        std::printf("%s\n", out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
        return 0;
    }
    for (size_t i = 0; i < vectors.size(); ++i) {
        std::printf("embedding %zu:", i);
        for (float v : vectors[i]) std::printf(" %9.6f", v);
        std::printf("\n");
    }
    if (vectors.size() > 1) {
        std::printf("\ncosine similarity matrix:\n");
        for (const std::vector<float>& a : vectors) {
            for (const std::vector<float>& b : vectors) std::printf(" %6.3f", cosine(a, b));
            std::printf("\n");
        }
    }
    std::fprintf(stderr, "%zu inputs, %u dimensions, %s pooling%s\n", vectors.size(), embedder.dimension(),
                 std::string(engine::pooling_name(embedder.pooling())).c_str(), no_normalize ? "" : ", normalized");
    return 0;
}

}  // namespace vkllm::cli
