#pragma once
// Embeddings of texts, as llama.cpp's embeddings output: the hidden states of any model the engine
// opened (an encoder's last layer, BERT; a decoder's after its final norm) pooled per input, by the
// GGUF's <arch>.pooling_type unless asked otherwise (none given: mean for an encoder, last for a
// decoder), and L2-normalized. Each input runs alone on one sequence of the engine's session, one
// graph replay per input up to n_ubatch tokens (the graph of each power-of-two length baked once), so
// its tokens never see another input's; that sequence's cache is overwritten and left empty.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/engine.h"

namespace vkllm::engine {

// llama.cpp's pooling types (LLAMA_POOLING_TYPE_MEAN, CLS, LAST): the mean of every token's state,
// the first token's ([CLS] for BERT), the last token's.
enum class Pooling { Mean, Cls, Last };

std::string_view pooling_name(Pooling pooling);  // "mean", "cls", "last"
Pooling parse_pooling(std::string_view name);    // throws naming the value when it is none of those

// What the file asks for: <arch>.pooling_type 1 mean, 2 cls, 3 last; absent or 0 (none): mean for an
// encoder, last for a decoder. Throws for rank (a reranker's head) or an unknown value.
Pooling model_pooling(const gguf::File& file, const model::ModelInfo& info);

struct EmbeddingOptions {
    std::optional<Pooling> pooling;  // none: model_pooling
    bool normalize = true;           // L2-normalize each vector, as llama.cpp's embeddings output does
    uint32_t seq = 0;                // the session's sequence the inputs run on
};

class Embedder {
public:
    explicit Embedder(Engine& engine, EmbeddingOptions options = {});

    uint32_t dimension() const { return engine_.info().n_embd; }  // floats per vector
    Pooling pooling() const { return pooling_; }
    uint32_t max_tokens() const { return engine_.session().n_ctx(); }  // the longest input

    // An input's tokens: the text with the vocabulary's specials added ([CLS] ... [SEP] for BERT, BOS
    // where the vocabulary adds it), special-token text not parsed.
    std::vector<tokenizer::TokenId> tokenize(std::string_view text) const;

    // One vector of dimension() floats per input, in order. Throws vkllm::Error before running
    // anything when an input is empty, longer than max_tokens() or holds a token outside the vocabulary,
    // naming it.
    std::vector<std::vector<float>> embed(const std::vector<std::vector<tokenizer::TokenId>>& inputs);
    // The same, asking `stop` before each input runs (its one graph replay, or its chunks): once it
    // says yes, returns the vectors done so far, fewer than the inputs (a server whose client left).
    std::vector<std::vector<float>> embed(const std::vector<std::vector<tokenizer::TokenId>>& inputs,
                                          const std::function<bool()>& stop);
    std::vector<std::vector<float>> embed(const std::vector<std::string>& texts);

private:
    Engine& engine_;
    Pooling pooling_;
    EmbeddingOptions options_;
    std::vector<float> hidden_;  // one input's states, reused
};

}  // namespace vkllm::engine
