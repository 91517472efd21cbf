// vkllm eval -m MODEL (--tokens 1,5,9 | --tokens-file F) --logits-out FILE : teacher forcing; writes
// the logits after every position as little-endian float32 [n_tokens][n_vocab].
#include <cstdio>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "core/file.h"
#include "media.h"
#include "model_options.h"

namespace vkllm::cli {
namespace {

std::vector<int32_t> parse_ids(std::string text, std::string_view source) {
    for (char& c : text)
        if (c == ',') c = ' ';
    std::istringstream in(text);
    std::vector<int32_t> ids;
    std::string word;
    while (in >> word) ids.push_back(int32_t(parse_number<uint32_t>(source, word)));
    if (ids.empty()) fail("{} holds no token ids", source);
    return ids;
}

}  // namespace

int eval(Args args) {
    ModelOptions options;
    MediaOptions media;
    MediaEvalOutputs outputs;
    std::string token_list, tokens_path;
    Options parser("eval", "-m MODEL (--tokens 1,5,9 | --tokens-file F) --logits-out FILE [options]",
                   "Teacher forcing: the logits after every position, written as little-endian float32 [n_tokens][n_vocab].\n"
                   "With --mmproj and --image, the prompt of -p with its images instead of token ids.");
    parser.add("--tokens", token_list, "IDS", "the token ids, separated by commas or spaces")
        .add("--tokens-file", tokens_path, "FILE", "a file of token ids")
        .add("--logits-out", outputs.logits_path, "FILE", "where the logits go")
        .required();
    options.declare(parser);
    media.declare(parser);
    parser.add("-p,--prompt", outputs.prompt, "TEXT", "the prompt, with <__media__> where each image goes")
        .add("--embd-out", outputs.embd_path, "FILE", "write the projector's output, f32 [image tokens][n_embd]")
        .add("--layout-out", outputs.layout_path, "FILE", "write position, kind, token and logits row per position");
    if (!parser.parse(args)) return 0;
    options.check();
    media.check();
    if (media.active()) return eval_with_media(options, media, outputs);
    if (token_list.empty() == tokens_path.empty()) fail("give the tokens with either --tokens or --tokens-file");
    const std::vector<int32_t> tokens = token_list.empty() ? parse_ids(read_text_file(tokens_path, "token file"), tokens_path)
                                                           : parse_ids(token_list, "--tokens");
    const std::string& logits_path = outputs.logits_path;
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
