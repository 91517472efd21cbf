#include "sampling/sampler.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <unordered_map>

#include "core/error.h"

namespace vkllm::sampling {

uint64_t splitmix64(uint64_t& state) {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

Rng::Rng(uint64_t seed) {
    for (uint64_t& word : state_) word = splitmix64(seed);
}

uint64_t Rng::next() {
    const auto rotl = [](uint64_t x, int k) { return (x << k) | (x >> (64 - k)); };
    const uint64_t result = rotl(state_[1] * 5, 7) * 9;
    const uint64_t t = state_[1] << 17;
    state_[2] ^= state_[0];
    state_[3] ^= state_[1];
    state_[1] ^= state_[2];
    state_[0] ^= state_[3];
    state_[2] ^= t;
    state_[3] = rotl(state_[3], 45);
    return result;
}

double Rng::uniform() { return double(next() >> 11) * 0x1.0p-53; }

TokenId argmax(std::span<const float> logits) {
    if (logits.empty()) fail("sampling: empty logits");
    return TokenId(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

void apply_penalties(std::span<float> logits, std::span<const TokenId> recent, const SamplerParams& params) {
    std::unordered_map<TokenId, int> counts;
    for (TokenId id : recent)
        if (id >= 0 && size_t(id) < logits.size()) ++counts[id];
    for (auto [id, count] : counts) {
        float& logit = logits[size_t(id)];
        logit = logit <= 0 ? logit * params.repeat_penalty : logit / params.repeat_penalty;
        logit -= float(count) * params.frequency_penalty + params.presence_penalty;
    }
}

void validate(const SamplerParams& p, const ParamNames& names) {
    if (!std::isfinite(p.temperature) || p.temperature < 0)
        fail("{} must be a finite number of at least 0 (0 always picks the most likely token), not {}",
             names.temperature, p.temperature);
    if (p.top_k < 0) fail("{} must be at least 0 (0 turns it off), not {}", names.top_k, p.top_k);
    if (!(p.top_p > 0 && p.top_p <= 1))
        fail("{} must be above 0 and at most 1 (1 turns it off), not {}", names.top_p, p.top_p);
    if (!(p.min_p >= 0 && p.min_p <= 1))
        fail("{} must be between 0 and 1 (0 turns it off), not {}", names.min_p, p.min_p);
    if (!std::isfinite(p.repeat_penalty) || p.repeat_penalty <= 0)
        fail("{} must be a finite number above 0 (1 turns it off), not {}", names.repeat_penalty, p.repeat_penalty);
    if (!std::isfinite(p.frequency_penalty))
        fail("{} must be a finite number (0 turns it off), not {}", names.frequency_penalty, p.frequency_penalty);
    if (!std::isfinite(p.presence_penalty))
        fail("{} must be a finite number (0 turns it off), not {}", names.presence_penalty, p.presence_penalty);
    if (p.penalty_last_n < -1)
        fail("{} must be at least -1 (-1: every token so far, 0: off), not {}", names.penalty_last_n, p.penalty_last_n);
}

uint64_t random_seed() {
    std::random_device entropy;
    return (uint64_t(entropy()) << 32) | entropy();
}

Sampler::Sampler(const SamplerParams& params) : params_(params), rng_(params.seed) {}

void Sampler::accept(TokenId token) {
    if (params_.penalty_last_n == 0) return;
    recent_.push_back(token);
    while (params_.penalty_last_n > 0 && recent_.size() > size_t(params_.penalty_last_n)) recent_.pop_front();
}

void Sampler::reset() {
    recent_.clear();
    rng_ = Rng(params_.seed);
}

// top-k, top-p and min-p on the untempered distribution, as llama.cpp's chain runs them before
// its temperature step. Leaves the survivors sorted by descending logit; always keeps one.
void Sampler::truncate(std::vector<Candidate>& candidates) const {
    const auto by_logit = [](const Candidate& a, const Candidate& b) {
        return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
    };
    size_t keep = candidates.size();
    if (params_.top_k > 0) keep = std::min(keep, size_t(params_.top_k));
    std::partial_sort(candidates.begin(), candidates.begin() + ptrdiff_t(keep), candidates.end(), by_logit);
    candidates.resize(keep);

    const float max_logit = candidates.front().logit;
    std::vector<double> probs(candidates.size());
    double total = 0;
    for (size_t i = 0; i < candidates.size(); ++i) total += probs[i] = std::exp(double(candidates[i].logit - max_logit));
    if (params_.top_p < 1.0f) {
        double cumulative = 0;
        for (size_t i = 0; i < candidates.size(); ++i) {
            cumulative += probs[i] / total;
            if (cumulative >= params_.top_p) {
                candidates.resize(i + 1);
                break;
            }
        }
    }
    if (params_.min_p > 0.0f) {
        const double threshold = double(max_logit) + std::log(double(params_.min_p));
        size_t i = 1;
        while (i < candidates.size() && double(candidates[i].logit) >= threshold) ++i;
        candidates.resize(i);
    }
}

TokenId Sampler::sample(std::span<const float> logits) {
    if (logits.empty()) fail("sampling: empty logits");
    scratch_.assign(logits.begin(), logits.end());
    for (float& logit : scratch_)
        if (std::isnan(logit)) logit = -INFINITY;  // a NaN must not break the ordering below
    if (!recent_.empty()) {
        const std::vector<TokenId> window(recent_.begin(), recent_.end());
        apply_penalties(scratch_, window, params_);
    }
    TokenId chosen;
    if (params_.temperature <= 0 || scratch_[size_t(argmax(scratch_))] == -INFINITY) {
        chosen = argmax(scratch_);
    } else {
        std::vector<Candidate> candidates(scratch_.size());
        for (size_t i = 0; i < scratch_.size(); ++i) candidates[i] = {TokenId(i), scratch_[i]};
        truncate(candidates);
        std::vector<double> weights(candidates.size());
        double total = 0;
        for (size_t i = 0; i < candidates.size(); ++i)
            total += weights[i] = std::exp(double(candidates[i].logit - candidates.front().logit) / params_.temperature);
        const double target = rng_.uniform() * total;
        double cumulative = 0;
        chosen = candidates.back().id;  // reached only through rounding at the very top
        for (size_t i = 0; i < candidates.size(); ++i) {
            cumulative += weights[i];
            if (target < cumulative) {
                chosen = candidates[i].id;
                break;
            }
        }
    }
    accept(chosen);
    return chosen;
}

}  // namespace vkllm::sampling
