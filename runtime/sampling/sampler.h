#pragma once
// Token sampling as llama.cpp's default chain orders it: logit biases, repetition/frequency/presence
// penalties, a grammar's constraint, top-k, top-p, min-p, temperature, then a draw. Temperature <= 0
// is greedy (argmax). The generator is our own (xoshiro256**, seeded through splitmix64), so a seed
// gives the same tokens on every platform and standard library.
//
// A grammar constrains the generated tokens only (prompt tokens never enter it). Where the grammar
// state's token mask is cached, the draw is among the tokens it allows. Otherwise it is checked
// lazily: tokens are checked one by one in logit order until the top-k (greedy: the first) that the
// grammar allows are known; those are exactly the top-k of the masked vocabulary, so the draw among
// them gives the very tokens that masking first gives. Only where few tokens fit the grammar, or
// without top-k, is the whole vocabulary masked (one trie walk, then cached). llama.cpp's lazy check
// looks at the drawn token alone, which keeps refused tokens in the top-k's probabilities and so
// draws from another distribution than the masked one.
#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "sampling/grammar.h"
#include "sampling/grammar_matcher.h"
#include "sampling/token_table.h"

namespace vkllm::sampling {

// xoshiro256** 1.0 (Blackman & Vigna, 2018); the state comes from splitmix64(seed).
class Rng {
public:
    explicit Rng(uint64_t seed);
    uint64_t next();
    double uniform();  // [0, 1) with 53 random bits

private:
    uint64_t state_[4];
};

uint64_t splitmix64(uint64_t& state);

struct SamplerParams {
    float temperature = 0.8f;        // <= 0: greedy
    int top_k = 40;                  // <= 0: off
    float top_p = 0.95f;             // >= 1: off
    float min_p = 0.05f;             // <= 0: off
    float repeat_penalty = 1.0f;     // 1: off; divides positive logits, multiplies negative ones
    float frequency_penalty = 0.0f;  // subtracted once per occurrence in the window
    float presence_penalty = 0.0f;   // subtracted once if present in the window
    int penalty_last_n = 64;         // window of recent tokens the penalties look at; 0: off; -1: all
    uint64_t seed = 0;
    // Added to the raw logits before anything else, as OpenAI's logit_bias: -100 or below (or -inf)
    // bans the token. A token named twice gets both.
    std::vector<std::pair<TokenId, float>> logit_bias;
    // Generated tokens must continue a match of this grammar, and end generation only where it is
    // complete; null: no constraint. Shared and immutable; each sampler keeps its own state.
    std::shared_ptr<const Grammar> grammar;
    bool grammar_lazy = true;  // false: mask the whole vocabulary every step (the same tokens, slower)
    // >= 0: record each sampled token's log-probability and this many most likely alternatives
    // (at most max_top_logprobs) under the model's own distribution; -1: off (no extra pass).
    int top_logprobs = -1;
};

constexpr int max_top_logprobs = 20;

// A log-probability under the model's distribution: the log-softmax of the raw logits, before the
// biases, penalties, grammar, truncation and temperature, so that a reply's sum is its log-probability.
struct TokenLogprob {
    TokenId id;
    double logprob;
};
struct TokenLogprobs {
    TokenLogprob sampled;
    std::vector<TokenLogprob> top;  // the most likely tokens, most likely first (ties: lower id first)
};

// The name each parameter has where the user gave it (a command-line flag, a JSON key), for errors.
struct ParamNames {
    std::string_view temperature = "temperature", top_k = "top_k", top_p = "top_p", min_p = "min_p",
                     repeat_penalty = "repeat_penalty", frequency_penalty = "frequency_penalty",
                     presence_penalty = "presence_penalty", penalty_last_n = "repeat_last_n",
                     logit_bias = "logit_bias", top_logprobs = "top_logprobs";
};

// Throws one sentence naming the first value outside its range (a NaN or infinite temperature, a
// top-p outside (0, 1], a repeat penalty <= 0, a NaN or +inf bias, a bias on a token outside the
// vocabulary when n_vocab is given...), before any token is sampled with it.
void validate(const SamplerParams& params, const ParamNames& names = {}, size_t n_vocab = 0);

// A seed from the operating system's entropy, for llama.cpp's --seed -1 (every run differs).
uint64_t random_seed();

TokenId argmax(std::span<const float> logits);  // the first maximum

// The penalties of llama.cpp's `llama_sampler_penalties`, applied in place.
void apply_penalties(std::span<float> logits, std::span<const TokenId> recent, const SamplerParams& params);

class Sampler {
public:
    // `tokens`: the vocabulary as the grammar sees it (vocab_table.h), needed when params.grammar is set.
    explicit Sampler(const SamplerParams& params, std::shared_ptr<const TokenTable> tokens = nullptr);

    // Picks the next token from one row of logits (not modified), records it, and advances the
    // grammar over it. Throws when the grammar leaves no token with a finite logit.
    // `budget`: the tokens the reply may still take, this one included (its max_tokens, the room in
    // its context). Under a grammar, once the budget runs short of what the match needs to close,
    // only tokens that leave room to close it are drawn, so a reply cut by its budget still parses
    // (JSON whose last string or array ends early) wherever the vocabulary has the closing text.
    TokenId sample(std::span<const float> logits, uint32_t budget = UINT32_MAX);
    // Records a token chosen elsewhere (the prompt) for the penalties; the grammar never sees it.
    void accept(TokenId token);
    void reset();            // forgets the history, restarts the generator from the seed and the grammar
    void restart_grammar();  // the next sampled token starts a new match of the grammar (a new reply)

    // The last sampled token's log-probabilities, when params().top_logprobs >= 0.
    const TokenLogprobs& logprobs() const { return logprobs_; }
    // How the grammar decided so far: tokens the lazy check settled, those that needed a trie walk,
    // and those whose state's mask was cached.
    struct GrammarStats {
        uint64_t lazy = 0, masked = 0, cached = 0;
        uint64_t closing = 0;  // tokens drawn among those that leave room to close within the budget
    };
    const GrammarStats& grammar_stats() const { return grammar_stats_; }
    const SamplerParams& params() const { return params_; }

private:
    struct Candidate {
        TokenId id;
        float logit;
    };
    static bool by_logit(const Candidate& a, const Candidate& b);  // descending; ties: lower id first
    void measure_logprobs(std::span<const float> logits);
    bool greedy() const;
    void load_candidates();                                // candidates_: every token with its logit in scratch_
    void top_k();                                          // candidates_: all of scratch_, cut to top-k and sorted
    bool top_k_allowed(size_t k, std::vector<Candidate>& allowed);
    TokenId draw(std::vector<Candidate>& candidates);      // top-p, min-p, temperature and the draw
    TokenId pick();                                        // from scratch_ as it stands
    TokenId pick_allowed();                                // from scratch_, under the grammar
    TokenId pick_closing(TokenId chosen, uint32_t budget); // `chosen`, or a token that can still close in budget

    SamplerParams params_;
    Rng rng_;
    std::deque<TokenId> recent_;
    std::vector<float> scratch_;
    std::vector<Candidate> candidates_, allowed_;
    std::unique_ptr<GrammarMatcher> grammar_;
    TokenLogprobs logprobs_;
    GrammarStats grammar_stats_;
    double log_total_ = 0;  // log of the sum of exp(logit) over the vocabulary, for the sampled token's
};

}  // namespace vkllm::sampling
