#include "engine/embeddings.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace vkllm::engine {
namespace {

// A vector scaled to length 1 (llama.cpp's common_embd_normalize with its default, the Euclidean norm:
// the sum of squares in double); a zero vector stays zero.
void normalize(std::vector<float>& v) {
    double sum = 0;
    for (float x : v) sum += double(x) * x;
    const float scale = sum > 0 ? float(1.0 / std::sqrt(sum)) : 0.0f;
    for (float& x : v) x *= scale;
}

}  // namespace

std::string_view pooling_name(Pooling pooling) {
    switch (pooling) {
        case Pooling::Mean: return "mean";
        case Pooling::Cls: return "cls";
        case Pooling::Last: return "last";
    }
    return "?";
}

Pooling parse_pooling(std::string_view name) {
    for (Pooling pooling : {Pooling::Mean, Pooling::Cls, Pooling::Last})
        if (pooling_name(pooling) == name) return pooling;
    fail("unknown pooling '{}'; poolings: mean, cls, last", name);
}

Pooling model_pooling(const gguf::File& file, const model::ModelInfo& info) {
    const std::string key = info.arch + ".pooling_type";
    switch (file.get_u32(key).value_or(0)) {
        case 0: return info.encoder ? Pooling::Mean : Pooling::Last;  // none given
        case 1: return Pooling::Mean;
        case 2: return Pooling::Cls;
        case 3: return Pooling::Last;
        case 4: fail("{}: '{}' is rank, a reranker's scoring head, which vkllm does not run", file.name(), key);
        default: fail("{}: '{}' is {}, not a pooling type llama.cpp knows", file.name(), key, *file.get_u32(key));
    }
}

Embedder::Embedder(Engine& engine, EmbeddingOptions options)
    : engine_(engine), pooling_(options.pooling.value_or(model_pooling(engine.file(), engine.info()))),
      options_(options) {
    if (options.seq >= engine.session().n_seq())
        fail("sequence {} does not exist: the session has {}", options.seq, engine.session().n_seq());
}

std::vector<tokenizer::TokenId> Embedder::tokenize(std::string_view text) const {
    return engine_.tokenizer().tokenize(text, /*add_special=*/true, /*parse_special=*/false);
}

std::vector<std::vector<float>> Embedder::embed(const std::vector<std::vector<tokenizer::TokenId>>& inputs) {
    return embed(inputs, {});
}

std::vector<std::vector<float>> Embedder::embed(const std::vector<std::vector<tokenizer::TokenId>>& inputs,
                                                const std::function<bool()>& stop) {
    for (size_t i = 0; i < inputs.size(); ++i) {
        if (inputs[i].empty()) fail("input {} has no tokens to embed", i);
        if (inputs[i].size() > max_tokens())
            fail("input {} has {} tokens, more than the context of {} (raise it with -c, up to the model's {})", i,
                 inputs[i].size(), max_tokens(), engine_.info().n_ctx_train);
        for (tokenizer::TokenId id : inputs[i])
            if (id < 0 || uint32_t(id) >= engine_.info().n_vocab)
                fail("input {}: token id {} is outside the vocabulary of {}", i, id, engine_.info().n_vocab);
    }
    model::Session& session = engine_.session();
    const uint32_t n_embd = dimension();
    std::vector<std::vector<float>> vectors;
    vectors.reserve(inputs.size());
    for (const std::vector<tokenizer::TokenId>& tokens : inputs) {
        if (stop && stop()) break;
        session.truncate(options_.seq, 0);
        hidden_.clear();
        session.eval_hidden(options_.seq, tokens, hidden_);
        std::vector<float>& v = vectors.emplace_back(n_embd);
        const size_t n = tokens.size();
        if (pooling_ == Pooling::Mean) {
            // llama.cpp sums the rows scaled by 1/n; in double here, then rounded once.
            std::vector<double> sum(n_embd, 0.0);
            for (size_t t = 0; t < n; ++t)
                for (uint32_t i = 0; i < n_embd; ++i) sum[i] += hidden_[t * n_embd + i];
            for (uint32_t i = 0; i < n_embd; ++i) v[i] = float(sum[i] / double(n));
        } else {
            const size_t row = pooling_ == Pooling::Cls ? 0 : n - 1;
            std::copy_n(hidden_.begin() + int64_t(row * n_embd), n_embd, v.begin());
        }
        if (options_.normalize) normalize(v);
    }
    session.truncate(options_.seq, 0);
    return vectors;
}

std::vector<std::vector<float>> Embedder::embed(const std::vector<std::string>& texts) {
    std::vector<std::vector<tokenizer::TokenId>> inputs;
    inputs.reserve(texts.size());
    for (const std::string& text : texts) inputs.push_back(tokenize(text));
    return embed(inputs);
}

}  // namespace vkllm::engine
