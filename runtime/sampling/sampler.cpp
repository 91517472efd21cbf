#include "sampling/sampler.h"

#include <algorithm>
#include <bit>
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

void validate(const SamplerParams& p, const ParamNames& names, size_t n_vocab) {
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
    for (const auto& [id, bias] : p.logit_bias) {
        if (std::isnan(bias) || bias == INFINITY)
            fail("{} for token {} must be a number (-100 or below bans it), not {}", names.logit_bias, id, bias);
        if (id < 0 || (n_vocab && size_t(id) >= n_vocab))
            fail("{} names token {}, outside the vocabulary of {} tokens", names.logit_bias, id, n_vocab);
    }
    if (p.top_logprobs < -1 || p.top_logprobs > max_top_logprobs)
        fail("{} must be between 0 and {} (or -1: off), not {}", names.top_logprobs, max_top_logprobs, p.top_logprobs);
}

uint64_t random_seed() {
    std::random_device entropy;
    return (uint64_t(entropy()) << 32) | entropy();
}

Sampler::Sampler(const SamplerParams& params, std::shared_ptr<const TokenTable> tokens)
    : params_(params), rng_(params.seed) {
    if (params_.grammar) {
        if (!tokens) fail("sampling: a grammar needs the vocabulary's token table");
        grammar_ = std::make_unique<GrammarMatcher>(params_.grammar, std::move(tokens));
    }
}

void Sampler::accept(TokenId token) {
    if (params_.penalty_last_n == 0) return;
    recent_.push_back(token);
    while (params_.penalty_last_n > 0 && recent_.size() > size_t(params_.penalty_last_n)) recent_.pop_front();
}

void Sampler::reset() {
    recent_.clear();
    rng_ = Rng(params_.seed);
    restart_grammar();
}

void Sampler::restart_grammar() {
    if (grammar_) grammar_->reset();
}

// One pass for the maximum and the top alternatives, one for the sum, in double precision.
void Sampler::measure_logprobs(std::span<const float> logits) {
    const size_t n_top = size_t(params_.top_logprobs);
    std::vector<TokenLogprob>& top = logprobs_.top;
    top.clear();
    double max = -INFINITY;
    for (size_t i = 0; i < logits.size(); ++i) {
        const double x = std::isnan(logits[i]) ? -INFINITY : double(logits[i]);
        max = std::max(max, x);
        if (top.size() == n_top && (n_top == 0 || x <= top.back().logprob)) continue;
        auto at = std::ranges::upper_bound(top, x, std::greater<>(), &TokenLogprob::logprob);
        top.insert(at, {TokenId(i), x});
        if (top.size() > n_top) top.pop_back();
    }
    double sum = 0;
    for (float logit : logits)
        if (!std::isnan(logit)) sum += std::exp(double(logit) - max);
    log_total_ = max + std::log(sum);
    for (TokenLogprob& entry : top) entry.logprob = max == -INFINITY ? -INFINITY : entry.logprob - log_total_;
}

bool Sampler::greedy() const { return params_.temperature <= 0 || scratch_[size_t(argmax(scratch_))] == -INFINITY; }

bool Sampler::by_logit(const Candidate& a, const Candidate& b) { return a.logit > b.logit || (a.logit == b.logit && a.id < b.id); }

void Sampler::load_candidates() {
    candidates_.resize(scratch_.size());
    for (size_t i = 0; i < scratch_.size(); ++i) candidates_[i] = {TokenId(i), scratch_[i]};
}

void Sampler::top_k() {
    load_candidates();
    size_t keep = candidates_.size();
    if (params_.top_k > 0) keep = std::min(keep, size_t(params_.top_k));
    std::partial_sort(candidates_.begin(), candidates_.begin() + ptrdiff_t(keep), candidates_.end(), by_logit);
    candidates_.resize(keep);
    // Tokens without probability (banned, NaN) never count, so neither can the draw's rounding pick one.
    while (candidates_.size() > 1 && candidates_.back().logit == -INFINITY) candidates_.pop_back();
}

// top-p and min-p on the untempered distribution of the top-k survivors, as llama.cpp's chain runs
// them before its temperature step, then the draw. Always keeps one.
TokenId Sampler::draw(std::vector<Candidate>& candidates) {
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
    double weights_total = 0;
    for (size_t i = 0; i < candidates.size(); ++i)
        weights_total += probs[i] = std::exp(double(candidates[i].logit - max_logit) / params_.temperature);
    const double target = rng_.uniform() * weights_total;
    double cumulative = 0;
    for (size_t i = 0; i < candidates.size(); ++i) {
        cumulative += probs[i];
        if (target < cumulative) return candidates[i].id;
    }
    return candidates.back().id;  // reached only through rounding at the very top
}

TokenId Sampler::pick() {
    if (greedy()) return argmax(scratch_);
    top_k();
    return draw(candidates_);
}

// The lazy check: candidates in logit order, each checked alone, until `k` the grammar allows are
// found; those are then exactly the top k of the masked vocabulary. False when few tokens fit here
// (the checks so far project past a budget: one trie walk costs less, and is cached for this state).
bool Sampler::top_k_allowed(size_t k, std::vector<Candidate>& allowed) {
    const size_t budget = std::min(scratch_.size(), std::max<size_t>(256, 4 * k));
    load_candidates();
    std::partial_sort(candidates_.begin(), candidates_.begin() + ptrdiff_t(budget), candidates_.end(), by_logit);
    allowed.clear();
    for (size_t i = 0; i < budget; ++i) {
        const Candidate& c = candidates_[i];
        if (c.logit == -INFINITY) return !allowed.empty();  // the rest have no probability: never kept
        if (grammar_->allows(c.id)) {
            allowed.push_back(c);
            if (allowed.size() == k) return true;
        }
        if ((i + 1) % 32 == 0 && allowed.size() * budget < k * (i + 1)) return false;
    }
    return budget == scratch_.size() && !allowed.empty();  // every token checked: fewer than k fit
}

TokenId Sampler::pick_allowed() {
    constexpr size_t lazy_top_k_limit = 256;  // beyond it, one trie walk costs less than token walks
    const bool greedy_pick = params_.temperature <= 0;
    const size_t k = greedy_pick ? 1 : size_t(params_.top_k);
    const std::vector<uint64_t>* mask = grammar_->cached_mask();
    if (!mask && params_.grammar_lazy && k > 0 && k <= lazy_top_k_limit && top_k_allowed(k, allowed_)) {
        ++grammar_stats_.lazy;
        return greedy_pick ? allowed_.front().id : draw(allowed_);
    }
    ++(mask ? grammar_stats_.cached : grammar_stats_.masked);
    if (!mask) mask = &grammar_->allowed_tokens();
    // The allowed tokens with a probability, ranked as the unconstrained path ranks all of them.
    allowed_.clear();
    for (size_t word = 0; word < mask->size(); ++word)
        for (uint64_t bits = (*mask)[word]; bits; bits &= bits - 1) {
            const size_t id = word * 64 + size_t(std::countr_zero(bits));
            if (id < scratch_.size() && scratch_[id] > -INFINITY) allowed_.push_back({TokenId(id), scratch_[id]});
        }
    if (allowed_.empty())
        throw ConstraintError("sampling: no token the grammar allows here has a finite logit (the vocabulary cannot continue "
                              "the grammar, or logit_bias bans what could)");
    size_t keep = allowed_.size();
    if (greedy_pick) keep = 1;
    else if (params_.top_k > 0) keep = std::min(keep, size_t(params_.top_k));
    std::partial_sort(allowed_.begin(), allowed_.begin() + ptrdiff_t(keep), allowed_.end(), by_logit);
    allowed_.resize(keep);
    return greedy_pick ? allowed_.front().id : draw(allowed_);
}

// Among the tokens with a probability, in logit order, those after which the match can close within
// the rest of the budget (a code point a token at worst); the top-k of them drawn as usual. `chosen`
// stands when it leaves that room already, or when no token does (the budget was short from the start).
TokenId Sampler::pick_closing(TokenId chosen, uint32_t budget) {
    const uint32_t room = budget - 1;  // tokens after this one
    if (grammar_->distance_after(chosen) <= room) return chosen;
    load_candidates();
    std::sort(candidates_.begin(), candidates_.end(), by_logit);
    const size_t k = params_.temperature <= 0 ? 1 : params_.top_k > 0 ? size_t(params_.top_k) : candidates_.size();
    allowed_.clear();
    for (const Candidate& c : candidates_) {
        if (c.logit == -INFINITY || allowed_.size() == k) break;
        if (grammar_->distance_after(c.id) <= room) allowed_.push_back(c);
    }
    if (allowed_.empty()) return chosen;
    ++grammar_stats_.closing;
    return params_.temperature <= 0 ? allowed_.front().id : draw(allowed_);
}

TokenId Sampler::sample(std::span<const float> logits, uint32_t budget) {
    if (logits.empty()) fail("sampling: empty logits");
    if (params_.top_logprobs >= 0) measure_logprobs(logits);
    scratch_.assign(logits.begin(), logits.end());
    for (float& logit : scratch_)
        if (std::isnan(logit)) logit = -INFINITY;  // a NaN must not break the ordering below
    for (const auto& [id, bias] : params_.logit_bias) {
        if (id < 0 || size_t(id) >= scratch_.size())
            fail("logit_bias names token {}, outside the vocabulary of {} tokens", id, scratch_.size());
        scratch_[size_t(id)] = bias <= -100.0f ? -INFINITY : scratch_[size_t(id)] + bias;
    }
    if (!recent_.empty()) {
        const std::vector<TokenId> window(recent_.begin(), recent_.end());
        apply_penalties(scratch_, window, params_);
    }
    TokenId chosen = grammar_ ? pick_allowed() : pick();
    if (grammar_ && budget != UINT32_MAX && budget > 0) chosen = pick_closing(chosen, budget);
    if (grammar_) grammar_->accept(chosen);
    if (params_.top_logprobs >= 0) {
        const float logit = logits[size_t(chosen)];
        logprobs_.sampled = {chosen, std::isnan(logit) || log_total_ == -INFINITY ? -INFINITY : double(logit) - log_total_};
    }
    accept(chosen);
    return chosen;
}

}  // namespace vkllm::sampling
