// Sampler checks with fixed seeds: greedy is argmax, draws follow the intended distribution
// (chi-square against the expected counts), truncation removes exactly what it should, the
// penalties match llama.cpp's arithmetic, and a seed reproduces its sequence.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "core/error.h"
#include "sampling/sampler.h"

using namespace vkllm::sampling;

namespace {

std::vector<float> log_probs(std::initializer_list<double> probs) {
    std::vector<float> logits;
    for (double p : probs) logits.push_back(float(std::log(p)));
    return logits;
}

// Pearson's chi-square statistic of `counts` against `expected` probabilities (zero ones must
// not occur at all).
double chi_square(const std::map<TokenId, int>& counts, const std::vector<double>& expected, int n) {
    double statistic = 0;
    for (size_t id = 0; id < expected.size(); ++id) {
        const int observed = counts.count(TokenId(id)) ? counts.at(TokenId(id)) : 0;
        if (expected[id] == 0) {
            CHECK(observed == 0);
            continue;
        }
        const double e = expected[id] * n;
        statistic += (observed - e) * (observed - e) / e;
    }
    return statistic;
}

std::map<TokenId, int> draw(SamplerParams params, const std::vector<float>& logits, int n) {
    Sampler sampler(params);
    std::map<TokenId, int> counts;
    for (int i = 0; i < n; ++i) ++counts[sampler.sample(logits)];
    return counts;
}

SamplerParams plain(uint64_t seed) {
    SamplerParams params;
    params.temperature = 1.0f;
    params.top_k = 0;
    params.top_p = 1.0f;
    params.min_p = 0.0f;
    params.penalty_last_n = 0;
    params.seed = seed;
    return params;
}

constexpr int n_draws = 20000;
// Chi-square critical values at p = 0.001.
constexpr double chi2_df1 = 10.83, chi2_df2 = 13.82, chi2_df3 = 16.27;

}  // namespace

TEST_CASE("splitmix64 and xoshiro256** follow the published algorithms") {
    uint64_t state = 0;
    CHECK(splitmix64(state) == 0xE220A8397B1DCDAFull);  // the reference splitmix64's first output for seed 0
    Rng rng(42);
    double sum = 0;
    for (int i = 0; i < 100000; ++i) {
        const double u = rng.uniform();
        REQUIRE(u >= 0.0);
        REQUIRE(u < 1.0);
        sum += u;
    }
    CHECK(std::abs(sum / 100000 - 0.5) < 0.005);
}

TEST_CASE("greedy equals argmax, penalties included") {
    Rng rng(7);
    for (int round = 0; round < 200; ++round) {
        std::vector<float> logits(1000);
        for (float& x : logits) x = float(rng.uniform() * 20 - 10);
        SamplerParams params;
        params.temperature = 0.0f;
        params.penalty_last_n = 0;
        Sampler sampler(params);
        CHECK(sampler.sample(logits) == argmax(logits));
    }
    CHECK(argmax(std::vector<float>{1, 3, 3, 2}) == 1);  // the first maximum
}

TEST_CASE("temperature 1 draws the softmax distribution; temperature 0.5 squares it") {
    const std::vector<float> logits = log_probs({0.5, 0.3, 0.2});
    CHECK(chi_square(draw(plain(1), logits, n_draws), {0.5, 0.3, 0.2}, n_draws) < chi2_df2);
    SamplerParams cold = plain(2);
    cold.temperature = 0.5f;
    CHECK(chi_square(draw(cold, logits, n_draws), {0.25 / 0.38, 0.09 / 0.38, 0.04 / 0.38}, n_draws) < chi2_df2);
    // The same statistic rejects a wrong distribution, so the check can fail.
    CHECK(chi_square(draw(plain(1), logits, n_draws), {0.4, 0.4, 0.2}, n_draws) > chi2_df2);
}

TEST_CASE("top-k, top-p and min-p keep exactly the intended tokens") {
    const std::vector<float> logits = log_probs({0.5, 0.3, 0.15, 0.05});
    SamplerParams top_k = plain(3);
    top_k.top_k = 2;
    CHECK(chi_square(draw(top_k, logits, n_draws), {0.625, 0.375, 0, 0}, n_draws) < chi2_df1);
    SamplerParams top_p = plain(4);
    top_p.top_p = 0.9f;  // 0.5 + 0.3 + 0.15 reaches it: three tokens stay
    CHECK(chi_square(draw(top_p, logits, n_draws), {0.5 / 0.95, 0.3 / 0.95, 0.15 / 0.95, 0}, n_draws) < chi2_df2);
    SamplerParams min_p = plain(5);
    min_p.min_p = 0.25f;  // threshold 0.125: 0.05 goes
    CHECK(chi_square(draw(min_p, logits, n_draws), {0.5 / 0.95, 0.3 / 0.95, 0.15 / 0.95, 0}, n_draws) < chi2_df2);
    const std::vector<float> flat = log_probs({0.25, 0.25, 0.25, 0.25});
    CHECK(chi_square(draw(plain(6), flat, n_draws), {0.25, 0.25, 0.25, 0.25}, n_draws) < chi2_df3);
}

TEST_CASE("penalties follow llama.cpp's arithmetic") {
    std::vector<float> logits = {2.0f, -2.0f, 1.0f, 0.5f};
    SamplerParams params;
    params.repeat_penalty = 2.0f;
    params.frequency_penalty = 0.25f;
    params.presence_penalty = 0.5f;
    const std::vector<TokenId> recent = {0, 1, 0, 3, 9};  // 9 is outside the vocabulary: ignored
    apply_penalties(logits, recent, params);
    CHECK(logits[0] == doctest::Approx(2.0 / 2 - 2 * 0.25 - 0.5));
    CHECK(logits[1] == doctest::Approx(-2.0 * 2 - 0.25 - 0.5));
    CHECK(logits[2] == doctest::Approx(1.0));
    CHECK(logits[3] == doctest::Approx(0.5 / 2 - 0.25 - 0.5));

    // A strong repetition penalty turns greedy decoding away from the repeated token.
    SamplerParams greedy;
    greedy.temperature = 0.0f;
    greedy.repeat_penalty = 4.0f;
    greedy.penalty_last_n = 8;
    Sampler sampler(greedy);
    const std::vector<float> row = {3.0f, 2.0f, 0.0f};
    CHECK(sampler.sample(row) == 0);
    CHECK(sampler.sample(row) == 1);  // 3 / 4 < 2
}

TEST_CASE("a seed reproduces its sequence; another seed does not") {
    std::vector<float> logits(50);
    for (size_t i = 0; i < logits.size(); ++i) logits[i] = float(std::sin(double(i)));
    auto run = [&](uint64_t seed) {
        Sampler sampler(plain(seed));
        std::vector<TokenId> out;
        for (int i = 0; i < 64; ++i) out.push_back(sampler.sample(logits));
        return out;
    };
    CHECK(run(11) == run(11));
    CHECK(run(11) != run(12));
    Sampler sampler(plain(11));
    const TokenId first = sampler.sample(logits);
    sampler.reset();
    CHECK(sampler.sample(logits) == first);
}

TEST_CASE("NaN and -inf logits never win and never crash") {
    const std::vector<float> logits = {NAN, -INFINITY, 1.0f, NAN};
    for (uint64_t seed = 0; seed < 50; ++seed) CHECK(Sampler(plain(seed)).sample(logits) == 2);
}

TEST_CASE("penalty_last_n -1 remembers every token; 0 none") {
    SamplerParams greedy;
    greedy.temperature = 0.0f;
    greedy.repeat_penalty = 100.0f;
    greedy.penalty_last_n = -1;
    Sampler all(greedy);
    for (int i = 0; i < 200; ++i) all.accept(0);  // far past the default window of 64
    const std::vector<float> row = {3.0f, 2.0f};
    CHECK(all.sample(row) == 1);
    greedy.penalty_last_n = 0;
    Sampler none(greedy);
    none.accept(0);
    CHECK(none.sample(row) == 0);
}

TEST_CASE("validate refuses each out-of-range value with one sentence naming it") {
    const auto error_of = [](void (*change)(SamplerParams&)) -> std::string {
        SamplerParams params;
        change(params);
        try {
            validate(params, ParamNames{.temperature = "--temp", .top_p = "--top-p"});
        } catch (const vkllm::Error& error) {
            return error.what();
        }
        return "";
    };
    CHECK(error_of([](SamplerParams&) {}).empty());
    CHECK(error_of([](SamplerParams& p) { p.temperature = 0; p.top_p = 1; p.min_p = 0; }).empty());
    CHECK(error_of([](SamplerParams& p) { p.temperature = NAN; }).starts_with("--temp must be a finite number"));
    CHECK(error_of([](SamplerParams& p) { p.temperature = INFINITY; }).ends_with("not inf"));
    CHECK(error_of([](SamplerParams& p) { p.temperature = -1; }).ends_with("not -1"));
    CHECK(error_of([](SamplerParams& p) { p.top_k = -2; }).starts_with("top_k must be at least 0"));
    CHECK(error_of([](SamplerParams& p) { p.top_p = 5; }).starts_with("--top-p must be above 0 and at most 1"));
    CHECK(error_of([](SamplerParams& p) { p.top_p = 0; }).starts_with("--top-p"));
    CHECK(error_of([](SamplerParams& p) { p.min_p = 2; }).starts_with("min_p must be between 0 and 1"));
    CHECK(error_of([](SamplerParams& p) { p.min_p = -0.1f; }).starts_with("min_p"));
    CHECK(error_of([](SamplerParams& p) { p.repeat_penalty = 0; }).starts_with("repeat_penalty must be a finite number above 0"));
    CHECK(error_of([](SamplerParams& p) { p.repeat_penalty = -1; }).starts_with("repeat_penalty"));
    CHECK(error_of([](SamplerParams& p) { p.frequency_penalty = NAN; }).starts_with("frequency_penalty"));
    CHECK(error_of([](SamplerParams& p) { p.presence_penalty = -INFINITY; }).starts_with("presence_penalty"));
    CHECK(error_of([](SamplerParams& p) { p.penalty_last_n = -2; }).starts_with("repeat_last_n must be at least -1"));
}

namespace {

// Each single character of "{}[]:,\" ab01" and some multi-character pieces; 0 ends generation, 1 is
// a control token.
std::shared_ptr<const TokenTable> small_vocabulary() {
    std::vector<std::string> pieces = {"<eos>", "<ctl>"};
    for (char c : std::string_view("{}[]:,\" ab01")) pieces.emplace_back(1, c);
    for (const char* piece : {"{\"", "\":", "\",", "ab", "\"a\"", "10", "[1", "0]", "}\"", " \""}) pieces.emplace_back(piece);
    std::vector<TokenTable::Kind> kinds(pieces.size(), TokenTable::Kind::Text);
    kinds[0] = TokenTable::Kind::End;
    kinds[1] = TokenTable::Kind::Special;
    return std::make_shared<TokenTable>(std::move(pieces), std::move(kinds));
}

constexpr std::string_view small_json = R"(root ::= "{" ws (pair ("," ws pair)*)? "}"
pair ::= str ":" ws (str | num | list) ws
list ::= "[" ws (num ("," ws num)*)? "]"
str ::= "\"" [ab ]* "\""
num ::= "0" | "1" [01]*
ws ::= " "?
)";

// Samples `n` tokens (restarting the grammar after an end token), logits drawn from `seed`.
std::vector<TokenId> constrained_run(SamplerParams params, const std::shared_ptr<const TokenTable>& table, uint64_t seed, int n,
                                     Sampler::GrammarStats* stats = nullptr) {
    Sampler sampler(params, table);
    Rng rng(seed);
    std::vector<TokenId> out;
    std::vector<float> logits(table->size());
    for (int i = 0; i < n; ++i) {
        for (float& x : logits) x = float(rng.uniform() * 8 - 4);
        out.push_back(sampler.sample(logits));
        if (out.back() == 0) sampler.restart_grammar();
    }
    if (stats) *stats = sampler.grammar_stats();
    return out;
}

}  // namespace

TEST_CASE("the lazy grammar check gives exactly the tokens of masking first") {
    const auto table = small_vocabulary();
    // JSON's states recur (the cached masks decide); a bounded repetition's do not (the lazy check does).
    const auto json_grammar = Grammar::parse(small_json);
    const auto counted = Grammar::parse("root ::= [ab ]{0,400} \"\\\"\"");
    Sampler::GrammarStats total;
    for (const auto& grammar : {json_grammar, counted})
        for (const auto& [temperature, top_k, top_p, min_p] : {std::tuple{0.0f, 40, 1.0f, 0.0f}, std::tuple{1.0f, 5, 1.0f, 0.0f},
                                                               std::tuple{0.7f, 12, 0.9f, 0.05f}, std::tuple{1.5f, 3, 0.5f, 0.2f},
                                                               std::tuple{1.0f, 0, 0.95f, 0.0f}}) {
            for (uint64_t seed = 1; seed <= 20; ++seed) {
                SamplerParams params = plain(seed);
                params.temperature = temperature;
                params.top_k = top_k;
                params.top_p = top_p;
                params.min_p = min_p;
                params.grammar = grammar;
                SamplerParams masked = params;
                masked.grammar_lazy = false;
                Sampler::GrammarStats stats;
                CHECK(constrained_run(params, table, seed, 300, &stats) == constrained_run(masked, table, seed, 300));
                total.lazy += stats.lazy;
                total.masked += stats.masked;
                total.cached += stats.cached;
            }
        }
    // Every path ran: tokens the lazy check settled, those it sent to a trie walk, and cached masks.
    CHECK(total.lazy > 1000);
    CHECK(total.masked > 500);
    CHECK(total.cached > 1000);
}

TEST_CASE("under a grammar: only its text, end tokens only where it is complete, never control tokens") {
    const auto table = small_vocabulary();
    SamplerParams params = plain(3);
    params.grammar = Grammar::parse(small_json);
    params.top_k = 8;
    for (uint64_t seed = 0; seed < 30; ++seed) {
        params.seed = seed;
        Sampler sampler(params, table);
        GrammarMatcher reference(params.grammar, table);
        Rng rng(seed);
        std::vector<float> logits(table->size());
        for (int i = 0; i < 200; ++i) {
            for (float& x : logits) x = float(rng.uniform() * 4);
            logits[0] += 1.0f;  // the end token is likely wherever it is allowed
            logits[1] = 50.0f;  // the control token most likely of all
            const TokenId id = sampler.sample(logits);
            REQUIRE(id != 1);
            REQUIRE(reference.allows(id));
            if (id == 0) {
                CHECK(reference.can_end());
                break;
            }
            reference.accept(id);
        }
    }
    // Logits for fewer tokens than the model's row: the ids past the tokenizer's vocabulary are never picked.
    Sampler sampler(params, table);
    std::vector<float> wide(table->size() + 5, 0.0f);
    wide.back() = 100.0f;
    CHECK(sampler.sample(wide) < TokenId(table->size()));
    // A grammar no token can continue fails with one sentence rather than picking anything.
    SamplerParams dead = plain(1);
    dead.grammar = Grammar::parse("root ::= \"z\"");
    CHECK_THROWS_WITH_AS(Sampler(dead, table).sample(std::vector<float>(table->size(), 0.0f)),
                         doctest::Contains("no token the grammar allows here has a finite logit"), ConstraintError);
    CHECK_THROWS_WITH_AS(Sampler{dead}, "sampling: a grammar needs the vocabulary's token table", vkllm::Error);
}

TEST_CASE("a reply under a grammar closes within its budget: the text a budget cuts is a whole match") {
    const auto table = small_vocabulary();
    const auto grammar = Grammar::parse(small_json);
    GrammarMatcher start(grammar, table);
    CHECK(start.distance_to_end() == 2);  // {}
    int closed_early = 0;
    for (uint32_t budget : {2u, 3u, 5u, 8u, 13u, 30u}) {
        for (uint64_t seed = 0; seed < 20; ++seed) {
            CAPTURE(budget);
            CAPTURE(seed);
            SamplerParams params = plain(seed);
            params.grammar = grammar;
            params.top_k = 8;
            Sampler sampler(params, table);
            GrammarMatcher reference(grammar, table);
            Rng rng(seed);
            std::vector<float> logits(table->size());
            uint32_t taken = 0;
            for (; taken < budget; ++taken) {
                for (float& x : logits) x = float(rng.uniform() * 4);
                logits[0] = -50.0f;  // the end token unlikely: the reply would run on
                const TokenId id = sampler.sample(logits, budget - taken);
                if (id == 0) break;
                reference.accept(id);
            }
            CHECK(reference.can_end());  // cut by its budget or ended, the text parses
            closed_early += sampler.grammar_stats().closing > 0;
        }
    }
    CHECK(closed_early > 50);  // the budget, not the logits, closed most of them
    // A character split across byte tokens counts its bytes still to come: a 4-byte character begun
    // with one token left could not be finished.
    std::vector<std::string> pieces = {"<eos>", "\"", "a", "\xF0", "\x9F", "\x98", "\x80"};
    std::vector<TokenTable::Kind> kinds(pieces.size(), TokenTable::Kind::Text);
    kinds[0] = TokenTable::Kind::End;
    const auto bytes = std::make_shared<TokenTable>(std::move(pieces), std::move(kinds));
    const auto quoted = Grammar::parse(R"(root ::= "\"" [^"]* "\"")");
    for (uint32_t budget = 2; budget < 12; ++budget)
        for (uint64_t seed = 0; seed < 10; ++seed) {
            SamplerParams params = plain(seed);
            params.grammar = quoted;
            Sampler sampler(params, bytes);
            GrammarMatcher reference(quoted, bytes);
            std::vector<float> logits = {-50.0f, 0.0f, 0.0f, 3.0f, 3.0f, 3.0f, 3.0f};  // lead bytes likely
            for (uint32_t taken = 0; taken < budget; ++taken) {
                const TokenId id = sampler.sample(logits, budget - taken);
                if (id == 0) break;
                reference.accept(id);
            }
            CAPTURE(budget);
            CHECK(reference.can_end());
        }
    // A budget too short from the start changes nothing: the draw is the unconstrained one.
    SamplerParams params = plain(5);
    params.grammar = grammar;
    std::vector<float> logits(table->size(), 0.0f);
    CHECK(Sampler(params, table).sample(logits, 1) == Sampler(params, table).sample(logits));
}

TEST_CASE("logit_bias adds to the raw logits; -100 and below ban") {
    const std::vector<float> row = {1.0f, 3.0f, 2.0f, 0.0f};
    SamplerParams greedy;
    greedy.temperature = 0.0f;
    greedy.penalty_last_n = 0;
    greedy.logit_bias = {{3, 2.5f}};
    CHECK(Sampler(greedy).sample(row) == 1);
    greedy.logit_bias = {{3, 3.5f}};
    CHECK(Sampler(greedy).sample(row) == 3);
    greedy.logit_bias = {{1, -100.0f}};
    CHECK(Sampler(greedy).sample(row) == 2);
    greedy.logit_bias = {{1, -INFINITY}, {2, -150.0f}};
    CHECK(Sampler(greedy).sample(row) == 0);
    greedy.logit_bias = {{3, 1.0f}, {3, 1.5f}};  // both count
    CHECK(Sampler(greedy).sample(row) == 1);
    // A banned token is never drawn, however likely.
    SamplerParams params = plain(9);
    params.logit_bias = {{0, -100.0f}};
    const std::vector<float> logits = log_probs({0.9, 0.05, 0.05});
    CHECK(chi_square(draw(params, logits, n_draws), {0, 0.5, 0.5}, n_draws) < chi2_df1);
    // Under a grammar, a ban sends the draw to the next token the grammar allows.
    const auto table = small_vocabulary();
    SamplerParams constrained = plain(1);
    constrained.temperature = 0.0f;
    constrained.grammar = Grammar::parse("root ::= \"ab\" | \"a\" \"b\"");
    TokenId ab = 0;
    while (table->piece(ab) != "ab") ++ab;
    std::vector<float> vocab_row(table->size(), 0.0f);
    vocab_row[size_t(ab)] = 5.0f;
    CHECK(Sampler(constrained, table).sample(vocab_row) == ab);
    constrained.logit_bias = {{ab, -100.0f}};
    CHECK(table->piece(Sampler(constrained, table).sample(vocab_row)) == "a");
    // Out of range.
    greedy.logit_bias = {{4, 1.0f}};
    CHECK_THROWS_WITH_AS(Sampler(greedy).sample(row), "logit_bias names token 4, outside the vocabulary of 4 tokens", vkllm::Error);
    CHECK_THROWS_WITH_AS(validate(greedy, {}, 4), "logit_bias names token 4, outside the vocabulary of 4 tokens", vkllm::Error);
    greedy.logit_bias = {{0, NAN}};
    CHECK_THROWS_WITH_AS(validate(greedy), "logit_bias for token 0 must be a number (-100 or below bans it), not nan", vkllm::Error);
    greedy.logit_bias = {{0, INFINITY}};
    CHECK_THROWS_AS(validate(greedy), vkllm::Error);
}

TEST_CASE("logprobs are the double-precision log-softmax of the raw logits, with the top alternatives") {
    Rng rng(17);
    std::vector<float> logits(5000);
    for (int round = 0; round < 20; ++round) {
        for (float& x : logits) x = float(rng.uniform() * 30 - 15);
        logits[7] = -INFINITY;
        logits[11] = NAN;
        logits[20] = logits[21] = 16.0f;  // a tie: the lower id comes first
        SamplerParams params = plain(uint64_t(round));
        params.temperature = 0.7f;
        params.top_k = 10;
        params.repeat_penalty = 1.3f;
        params.penalty_last_n = 8;
        params.logit_bias = {{20, -2.0f}};  // none of these change the reported distribution
        params.top_logprobs = 20;
        Sampler sampler(params);
        sampler.accept(21);
        const TokenId id = sampler.sample(logits);
        double max = -INFINITY, sum = 0;
        for (float x : logits)
            if (!std::isnan(x)) max = std::max(max, double(x));
        for (float x : logits)
            if (!std::isnan(x)) sum += std::exp(double(x) - max);
        const double log_total = max + std::log(sum);
        const TokenLogprobs& lp = sampler.logprobs();
        CHECK(lp.sampled.id == id);
        CHECK(std::abs(lp.sampled.logprob - (double(logits[size_t(id)]) - log_total)) < 1e-12);
        REQUIRE(lp.top.size() == 20);
        CHECK(lp.top[0].id == 20);
        CHECK(lp.top[1].id == 21);
        std::vector<float> sorted = logits;
        std::erase_if(sorted, [](float x) { return std::isnan(x); });
        std::ranges::sort(sorted, std::greater<>());
        for (size_t i = 0; i < lp.top.size(); ++i) {
            CHECK(std::abs(lp.top[i].logprob - (double(sorted[i]) - log_total)) < 1e-12);
            CHECK(logits[size_t(lp.top[i].id)] == sorted[i]);
        }
    }
    // Off by default: nothing is measured.
    Sampler quiet(plain(1));
    quiet.sample(logits);
    CHECK(quiet.logprobs().top.empty());
    SamplerParams bad = plain(1);
    bad.top_logprobs = 21;
    CHECK_THROWS_WITH_AS(validate(bad), "top_logprobs must be between 0 and 20 (or -1: off), not 21", vkllm::Error);
}
