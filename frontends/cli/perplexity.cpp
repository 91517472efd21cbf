// vkllm perplexity -m MODEL -f TEXT [-c CTX]: perplexity as llama.cpp's perplexity tool computes it.
// The text is tokenized once (with BOS), cut into windows of CTX tokens whose first token becomes
// BOS, and each window is scored on its second half: the mean negative log-likelihood of every
// token there given all before it in the window. A speed change can thus be shown to cost no quality.
#include <cmath>
#include <cstdio>

#include "core/error.h"
#include "core/file.h"
#include "model_options.h"

namespace vkllm::cli {
namespace {

// -log softmax(logits)[target], in double.
double negative_log_likelihood(std::span<const float> logits, int32_t target) {
    double max = *std::max_element(logits.begin(), logits.end()), sum = 0;
    for (float logit : logits) sum += std::exp(double(logit) - max);
    return std::log(sum) + max - logits[size_t(target)];
}

}  // namespace

int perplexity(Args args) {
    ModelOptions options;
    options.n_ctx = 512;
    std::string text_path;
    uint32_t max_chunks = 0;
    Options parser("perplexity", "-m MODEL -f TEXT [-c CTX] [options]",
                   "Perplexity of a text as llama.cpp's llama-perplexity computes it: windows of -c tokens, each scored "
                   "on its second half.");
    parser.add("-f,--file", text_path, "FILE", "the text").required();
    parser.add("--chunks", max_chunks, "N", "score at most N windows; 0: all");
    options.declare(parser);
    if (!parser.parse(args)) return 0;
    options.check();
    // A window scores its tokens after n_ctx / 2 except the last (it has no next token): none below 3.
    if (options.n_ctx && options.n_ctx < 3)
        fail("-c {} leaves no token to score (a window scores its second half but the last token); use -c 3 or more",
             options.n_ctx);
    const std::string text = read_text_file(text_path, "text file");

    std::unique_ptr<engine::Engine> engine = open_engine(options);
    const uint32_t n_ctx = engine->session().n_ctx();
    std::vector<int32_t> tokens = engine->tokenizer().tokenize(text, /*add_special=*/true, /*parse_special=*/false);
    if (tokens.size() < 2 * size_t(n_ctx))
        fail("{} holds {} tokens; perplexity with -c {} needs at least {}", text_path, tokens.size(), n_ctx, 2 * n_ctx);
    uint32_t n_chunks = uint32_t(tokens.size() / n_ctx);
    if (max_chunks) n_chunks = std::min(n_chunks, max_chunks);
    const int32_t bos = engine->tokenizer().vocab().bos;
    const bool add_bos = engine->tokenizer().vocab().add_bos && bos >= 0;
    const uint32_t first = n_ctx / 2;
    const uint32_t n_vocab = engine->info().n_vocab;

    double nll = 0;
    uint64_t count = 0;
    std::fprintf(stderr, "perplexity: %u chunks of %u tokens, scoring the last %u of each\n", n_chunks, n_ctx,
                 n_ctx - first - 1);
    for (uint32_t chunk = 0; chunk < n_chunks; ++chunk) {
        std::vector<int32_t> window(tokens.begin() + size_t(chunk) * n_ctx, tokens.begin() + size_t(chunk + 1) * n_ctx);
        const int32_t first_token = window[0];
        if (add_bos) window[0] = bos;
        engine->session().truncate(0);
        std::vector<float> logits;
        engine->session().eval(window, &logits);
        window[0] = first_token;
        for (uint32_t j = first; j + 1 < n_ctx; ++j)
            nll += negative_log_likelihood(std::span(logits).subspan(size_t(j) * n_vocab, n_vocab), window[j + 1]);
        count += n_ctx - first - 1;
        std::printf("[%u]%.4f,", chunk + 1, std::exp(nll / count));
        std::fflush(stdout);
    }
    std::printf("\nFinal estimate: PPL = %.4f\n", std::exp(nll / count));
    return 0;
}

}  // namespace vkllm::cli
