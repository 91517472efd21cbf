#pragma once
// Token sampling as llama.cpp's default chain orders it: repetition/frequency/presence penalties,
// top-k, top-p, min-p, temperature, then a draw. Temperature <= 0 is greedy (argmax).
// The generator is our own (xoshiro256**, seeded through splitmix64), so a seed gives the same
// tokens on every platform and standard library.
#include <cstdint>
#include <deque>
#include <span>
#include <string_view>
#include <vector>

namespace vkllm::sampling {

using TokenId = int32_t;

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
};

// The name each parameter has where the user gave it (a command-line flag, a JSON key), for errors.
struct ParamNames {
    std::string_view temperature = "temperature", top_k = "top_k", top_p = "top_p", min_p = "min_p",
                     repeat_penalty = "repeat_penalty", frequency_penalty = "frequency_penalty",
                     presence_penalty = "presence_penalty", penalty_last_n = "repeat_last_n";
};

// Throws one sentence naming the first value outside its range (a NaN or infinite temperature, a
// top-p outside (0, 1], a repeat penalty <= 0...), before any token is sampled with it.
void validate(const SamplerParams& params, const ParamNames& names = {});

// A seed from the operating system's entropy, for llama.cpp's --seed -1 (every run differs).
uint64_t random_seed();

TokenId argmax(std::span<const float> logits);  // the first maximum

// The penalties of llama.cpp's `llama_sampler_penalties`, applied in place.
void apply_penalties(std::span<float> logits, std::span<const TokenId> recent, const SamplerParams& params);

class Sampler {
public:
    explicit Sampler(const SamplerParams& params);

    // Picks the next token from one row of logits (not modified) and records it.
    TokenId sample(std::span<const float> logits);
    // Records a token chosen elsewhere (the prompt), so the penalties see it.
    void accept(TokenId token);
    void reset();  // forgets the history and restarts the generator from the seed

    const SamplerParams& params() const { return params_; }

private:
    struct Candidate {
        TokenId id;
        float logit;
    };
    void truncate(std::vector<Candidate>& candidates) const;

    SamplerParams params_;
    Rng rng_;
    std::deque<TokenId> recent_;
    std::vector<float> scratch_;
};

}  // namespace vkllm::sampling
