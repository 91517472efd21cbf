// bench_grammar: what constrained sampling costs the host per token at a real vocabulary, without a
// model. A vocab-only GGUF gives the tokenizer (../shared/testdata/tokenizer/llamacpp/
// ggml-vocab-gpt-2.gguf: 50257 tokens), a grammar constrains (json_object mode unless given), and
// the logits come from one of two stand-ins for a model:
//   follow: noise plus a large bonus on one token the grammar allows (picked untimed), as from a
//           model that writes the format: the top-k mixes that token with refused ones;
//   noise:  noise alone, as from random weights: most steps need the full mask.
// Each step is sampled three ways from the same logits: freely, under the grammar with the lazy check,
// and under the grammar masking first (the last two must agree). Reports microseconds per token.
// Usage: bench_grammar --vocab FILE [--grammar-file F | --json-schema-file F] [--tokens N] [--seed S]
#include <chrono>
#include <cstdio>
#include <string>

#include <fmt/format.h>

#include "core/error.h"
#include "core/file.h"
#include "sampling/json_schema.h"
#include "sampling/sampler.h"
#include "sampling/vocab_table.h"

using namespace vkllm;
using Clock = std::chrono::steady_clock;

namespace {

struct Options {
    std::string vocab_path, grammar_path, schema_path;
    int tokens = 1000;
    uint64_t seed = 1;
};

Options parse(int argc, char** argv) {
    Options options;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--vocab" && i + 1 < argc) options.vocab_path = argv[++i];
        else if (arg == "--grammar-file" && i + 1 < argc) options.grammar_path = argv[++i];
        else if (arg == "--json-schema-file" && i + 1 < argc) options.schema_path = argv[++i];
        else if (arg == "--tokens" && i + 1 < argc) options.tokens = std::stoi(argv[++i]);
        else if (arg == "--seed" && i + 1 < argc) options.seed = std::stoull(argv[++i]);
        else fail("unknown argument '{}' (usage: bench_grammar --vocab FILE [--grammar-file F | --json-schema-file F] "
                  "[--tokens N] [--seed S])", arg);
    }
    if (options.vocab_path.empty()) fail("--vocab FILE is required (a GGUF with a tokenizer)");
    if (options.tokens < 1) fail("--tokens must be positive");
    return options;
}

double microseconds_since(Clock::time_point start) { return std::chrono::duration<double, std::micro>(Clock::now() - start).count(); }

struct Totals {
    double free_us = 0, lazy_us = 0, masked_us = 0;
    double walk_us = 0;  // the guide's trie walks, in states it had not met
    int walks = 0;
    sampling::Sampler::GrammarStats stats;
    int documents = 0;
};

Totals run(const Options& options, bool follow, const std::shared_ptr<const sampling::Grammar>& grammar,
           const std::shared_ptr<const sampling::TokenTable>& table) {
    sampling::SamplerParams params;  // the run command's defaults: temperature 0.8, top-k 40, top-p 0.95, min-p 0.05
    params.seed = options.seed;
    sampling::Sampler free(params);
    params.grammar = grammar;
    sampling::Sampler lazy(params, table);
    params.grammar_lazy = false;
    sampling::Sampler masked(params, table);
    sampling::GrammarMatcher guide(grammar, table);  // where the constrained samplers stand, for `follow`
    sampling::Rng rng(options.seed ^ 0x9e3779b97f4a7c15ull);
    std::vector<float> logits(table->size());
    Totals totals;
    for (int step = 0; step < options.tokens; ++step) {
        for (float& x : logits) x = float(rng.uniform() * 4 - 2);
        const bool new_state = !guide.cached_mask();
        auto started = Clock::now();
        const std::vector<uint64_t>& mask = guide.allowed_tokens();
        if (new_state) {
            totals.walk_us += microseconds_since(started);
            ++totals.walks;
        }
        if (follow) {  // a bonus for one allowed token, from the guide's mask
            std::vector<sampling::TokenId> allowed;
            for (size_t id = 0; id < table->size(); ++id)
                if ((mask[id >> 6] >> (id & 63)) & 1) allowed.push_back(sampling::TokenId(id));
            logits[size_t(allowed[rng.next() % allowed.size()])] += 14.0f;
        }
        started = Clock::now();
        free.sample(logits);
        totals.free_us += microseconds_since(started);
        started = Clock::now();
        const sampling::TokenId token = lazy.sample(logits);
        totals.lazy_us += microseconds_since(started);
        started = Clock::now();
        if (masked.sample(logits) != token) fail("the lazy check and the mask disagree at step {}", step);
        totals.masked_us += microseconds_since(started);
        if (table->kind(token) == sampling::TokenTable::Kind::End) {
            ++totals.documents;
            guide.reset();
            lazy.restart_grammar();
            masked.restart_grammar();
        } else {
            guide.accept(token);
        }
    }
    totals.stats = lazy.grammar_stats();
    return totals;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        const Options options = parse(argc, argv);
        const tokenizer::Tokenizer tokenizer(tokenizer::load_vocab(options.vocab_path));
        auto started = Clock::now();
        const std::shared_ptr<const sampling::TokenTable> table = sampling::vocab_token_table(tokenizer);
        const double table_ms = microseconds_since(started) / 1e3;
        std::string what = "json_object mode";
        std::shared_ptr<const sampling::Grammar> grammar;
        if (!options.grammar_path.empty()) {
            grammar = sampling::Grammar::parse(read_text_file(options.grammar_path, "grammar file"));
            what = options.grammar_path;
        } else if (!options.schema_path.empty()) {
            grammar = sampling::json_schema_grammar(sampling::parse_json_schema(read_text_file(options.schema_path, "JSON schema file")));
            what = options.schema_path;
        } else {
            grammar = sampling::Grammar::parse(sampling::json_object_gbnf());
        }
        std::printf("vocabulary: %s, %zu tokens, %zu trie nodes, table built in %.1f ms\ngrammar: %s\n\n",
                    options.vocab_path.c_str(), table->size(), table->trie().size(), table_ms, what.c_str());
        std::printf("| logits | tokens | documents | free us/token | grammar us/token (lazy) | grammar us/token (mask first) "
                    "| settled lazily | trie walks | cached masks | us per trie walk (new state) |\n"
                    "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        for (bool follow : {true, false}) {
            const Totals t = run(options, follow, grammar, table);
            std::printf("| %s | %d | %d | %.1f | %.1f | %.1f | %llu | %llu | %llu | %.0f |\n", follow ? "follow" : "noise",
                        options.tokens, t.documents, t.free_us / options.tokens, t.lazy_us / options.tokens,
                        t.masked_us / options.tokens, (unsigned long long)t.stats.lazy, (unsigned long long)t.stats.masked,
                        (unsigned long long)t.stats.cached, t.walks ? t.walk_us / t.walks : 0.0);
        }
        return 0;
    } catch (const std::exception& error) {
        std::fprintf(stderr, "bench_grammar: %s\n", error.what());
        return 1;
    }
}
