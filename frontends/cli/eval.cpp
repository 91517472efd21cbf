// vkllm eval -m MODEL (--tokens 1,5,9 | --tokens-file F) --logits-out FILE : teacher forcing; writes
// the logits after every position as little-endian float32 [n_tokens][n_vocab].
#include <cstdio>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "media.h"
#include "model_options.h"

namespace vkllm::cli {
namespace {

constexpr const char* eval_usage = "usage: vkllm eval {} (--tokens 1,5,9 | --tokens-file F) --logits-out FILE";

std::vector<int32_t> parse_ids(std::string text, std::string_view source) {
    for (char& c : text)
        if (c == ',') c = ' ';
    std::istringstream in(text);
    std::vector<int32_t> ids;
    std::string word;
    while (in >> word) ids.push_back(int32_t(parse_count(source, word)));
    if (ids.empty()) fail("{} holds no token ids", source);
    return ids;
}

}  // namespace

int eval(Args args) {
    for (std::string_view arg : args)
        if (arg == "--mmproj" || arg == "--image") return eval_with_media(args);
    ModelOptions options;
    std::string logits_path;
    std::vector<int32_t> tokens;
    for (size_t i = 0; i < args.size(); ++i) {
        if (options.parse(args, i)) continue;
        if (args[i] == "--tokens" && i + 1 < args.size()) {
            tokens = parse_ids(std::string(args[++i]), "--tokens");
        } else if (args[i] == "--tokens-file" && i + 1 < args.size()) {
            std::ifstream in{std::string(args[++i])};
            if (!in) fail("cannot open {}", args[i]);
            std::stringstream text;
            text << in.rdbuf();
            tokens = parse_ids(text.str(), args[i]);
        } else if (args[i] == "--logits-out" && i + 1 < args.size()) {
            logits_path = args[++i];
        } else {
            fail("unexpected argument '{}'; {}", args[i], fmt::format(eval_usage, ModelOptions::usage));
        }
    }
    if (options.model_path.empty() || tokens.empty() || logits_path.empty()) fail(eval_usage, ModelOptions::usage);
    if (!options.n_ctx) options.n_ctx = uint32_t(tokens.size());

    std::unique_ptr<engine::Engine> engine = open_engine(options);
    std::vector<float> logits;
    engine->session().eval(tokens, &logits);
    std::ofstream out(logits_path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(logits.data()), std::streamsize(logits.size() * sizeof(float)));
    if (!out) fail("cannot write {}", logits_path);
    std::fprintf(stderr, "wrote %zu x %u logits to %s\n", tokens.size(), engine->info().n_vocab, logits_path.c_str());
    write_reports(options, *engine);
    return 0;
}

}  // namespace vkllm::cli
