// Many sequences in one session (model/session.h): prefilled one by one and decoded together, each
// sequence must give the tokens and logits it gives alone in a session of its own, whoever else
// shares the batch, joins or leaves; truncate keeps a prefix as recomputing it would; and one
// sequence's tokens never change another's logits by a single bit. For stories260K and a fixture of
// every family (Gemma 3's prompts run past its window, so the circular caches wrap per sequence).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>

#include "fixture_check.h"
#include "gpu_fixture.h"
#include "graph/baked.h"
#include "model/session.h"
#include "session_check.h"

using namespace vkllm;

namespace {

constexpr uint32_t n_ctx = 96, n_ubatch = 8;  // small chunks: Gemma 3's window caches hold 23 cells
constexpr double tolerance = 3e-4;

struct TestModel {
    std::string name;
    std::filesystem::path path;
};

std::vector<TestModel> test_models() {
    std::vector<TestModel> models;
    std::filesystem::path stories = std::filesystem::path(VKLLM_SHARED_DIR) / "testdata/models/stories260K.gguf";
    if (!std::filesystem::exists(stories)) stories = std::filesystem::path(VKLLM_SOURCE_DIR) / "models/stories260K.gguf";
    models.push_back({"stories260K", stories});
    for (const char* fixture : {"llama_f32", "mistral3_f32", "gemma3_f32", "mistral4_f32", "minimax_m3_f32"}) {
        const auto dir = test::fixture_dir(fixture);
        if (!dir.empty()) models.push_back({fixture, dir / "model.gguf"});
    }
    return models;
}

// Prompt i: a stretch of the fixture's tokens (or of a fixed pseudo-random sequence), its length
// different for each i.
std::vector<int32_t> prompt(const std::vector<int32_t>& source, uint32_t i) {
    const size_t length = 5 + (i * 7) % 23 + i, start = (i * 13) % (source.size() - length);
    std::vector<int32_t> tokens{1};
    tokens.insert(tokens.end(), source.begin() + int64_t(start), source.begin() + int64_t(start + length));
    return tokens;
}

int32_t argmax(std::span<const float> logits) {
    return int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

struct Run {
    std::vector<int32_t> tokens;  // generated
    std::vector<float> logits;    // [steps][n_vocab], the logits each token was picked from
};

// The sequence alone in a session of its own: its prompt, then `steps` greedy tokens one at a time.
Run alone(const model::Model& model, std::span<const int32_t> prompt_tokens, uint32_t steps) {
    model::Session session(test::device(), model, {.n_ctx = n_ctx, .n_ubatch = n_ubatch});
    std::span<const float> logits = session.eval(prompt_tokens);
    Run run;
    for (uint32_t step = 0; step < steps; ++step) {
        run.logits.insert(run.logits.end(), logits.begin(), logits.end());
        run.tokens.push_back(argmax(logits));
        if (step + 1 < steps) logits = session.eval(std::span(&run.tokens.back(), 1));
    }
    return run;
}

// Sequence s of a batched run: prefilled before step `join`, decoded for `steps` steps.
struct Schedule {
    uint32_t join = 0, steps = 0;
};

// Runs every sequence's schedule in one session of n_seq sequences: at each step, the sequences that
// join are prefilled, then every active one decodes its next greedy token in one decode() call.
std::vector<Run> together(const model::Model& model, uint32_t n_seq, const std::vector<std::vector<int32_t>>& prompts,
                          const std::vector<Schedule>& schedule) {
    model::Session session(test::device(), model, {.n_ctx = n_ctx, .n_seq = n_seq, .n_ubatch = n_ubatch});
    const size_t n_vocab = model.info().n_vocab;
    std::vector<Run> runs(prompts.size());
    std::vector<std::vector<float>> pending(prompts.size());  // logits the next token is picked from
    uint32_t last_step = 0;
    for (const Schedule& s : schedule) last_step = std::max(last_step, s.join + s.steps);
    for (uint32_t step = 0; step < last_step; ++step) {
        std::vector<uint32_t> seqs;
        std::vector<int32_t> tokens;
        for (uint32_t s = 0; s < prompts.size(); ++s) {
            if (step == schedule[s].join) {
                REQUIRE(session.n_past(s) == 0);
                std::span<const float> logits = session.eval(s, prompts[s]);
                pending[s].assign(logits.begin(), logits.end());
            }
            if (step < schedule[s].join || step >= schedule[s].join + schedule[s].steps) continue;
            runs[s].logits.insert(runs[s].logits.end(), pending[s].begin(), pending[s].end());
            runs[s].tokens.push_back(argmax(pending[s]));
            if (step + 1 == schedule[s].join + schedule[s].steps) {
                session.truncate(s, 0);  // leaves: its cells are free for the next
                continue;
            }
            seqs.push_back(s);
            tokens.push_back(runs[s].tokens.back());
        }
        if (seqs.empty()) continue;
        std::span<const float> logits = session.decode(seqs, tokens);
        REQUIRE(logits.size() == seqs.size() * n_vocab);
        for (size_t i = 0; i < seqs.size(); ++i)
            pending[seqs[i]].assign(logits.begin() + int64_t(i * n_vocab), logits.begin() + int64_t((i + 1) * n_vocab));
    }
    return runs;
}

std::vector<int32_t> source_tokens(const TestModel& m, const model::Model& model) {
    const auto tokens_file = m.path.parent_path() / "tokens.txt";
    if (std::filesystem::exists(tokens_file)) return test::read_tokens(tokens_file);
    std::vector<int32_t> tokens;
    for (uint32_t i = 0; i < 160; ++i) tokens.push_back(int32_t(2 + (i * 2654435761u >> 7) % (model.info().n_vocab - 2)));
    return tokens;
}

// Loads each test model present; calls check(name, model, source tokens).
template <class Check>
void for_each_model(Check check) {
    for (const TestModel& m : test_models()) {
        CAPTURE(m.name);
        gguf::File file = gguf::File::open(m.path);
        auto model = model::load_model(test::device(), file);
        check(m.name, *model, source_tokens(m, *model));
    }
}

}  // namespace

// In the device's own arithmetic (fp16 where it has it, as `vkllm run` decodes): the batch's matmuls
// and a lone sequence's matvecs round differently (test_llama.cpp), by up to 1e-4 on stories260K
// through the f16 cache (3e-6 on the fixtures in fp32); the tokens must be the same exactly.
TEST_CASE("N sequences decoded together give the tokens and logits each gives alone") {
    for_each_model([](const std::string& name, const model::Model& model, const std::vector<int32_t>& source) {
        const size_t n_vocab = model.info().n_vocab;
        for (uint32_t n_seq : {1u, 4u, 8u}) {
            CAPTURE(n_seq);
            std::vector<std::vector<int32_t>> prompts;
            std::vector<Schedule> schedule;
            for (uint32_t s = 0; s < n_seq; ++s) {
                prompts.push_back(prompt(source, s));
                schedule.push_back({0, 24});
            }
            const std::vector<Run> runs = together(model, n_seq, prompts, schedule);
            for (uint32_t s = 0; s < n_seq; ++s) {
                CAPTURE(s);
                const Run reference = alone(model, prompts[s], schedule[s].steps);
                CHECK(runs[s].tokens == reference.tokens);
                test::check_runs_agree(runs[s].logits, reference.logits, n_vocab, tolerance);
            }
        }
        MESSAGE(name << ": 1, 4 and 8 sequences agree with each alone");
    });
}

TEST_CASE("sequences joining and leaving mid-way give the tokens each gives alone") {
    test::Float32Kernels fp32_arithmetic;
    for_each_model([](const std::string&, const model::Model& model, const std::vector<int32_t>& source) {
        const size_t n_vocab = model.info().n_vocab;
        // Six requests over four sequences: 4 and 5 take the cells 1 and 0 left.
        const std::vector<Schedule> schedule{{0, 6}, {0, 3}, {2, 14}, {4, 9}, {4, 8}, {7, 10}};
        std::vector<std::vector<int32_t>> prompts;
        for (uint32_t s = 0; s < schedule.size(); ++s) prompts.push_back(prompt(source, s + 3));
        // The requests as they land on the session's sequences.
        const std::vector<uint32_t> slot{0, 1, 2, 3, 1, 0};
        model::Session session(test::device(), model, {.n_ctx = n_ctx, .n_seq = 4, .n_ubatch = n_ubatch});
        std::vector<Run> runs(schedule.size());
        std::vector<std::vector<float>> pending(schedule.size());
        for (uint32_t step = 0; step < 17; ++step) {
            std::vector<uint32_t> seqs, requests;
            std::vector<int32_t> tokens;
            for (uint32_t r = 0; r < schedule.size(); ++r) {
                if (step == schedule[r].join) {
                    REQUIRE(session.n_past(slot[r]) == 0);
                    std::span<const float> logits = session.eval(slot[r], prompts[r]);
                    pending[r].assign(logits.begin(), logits.end());
                }
                if (step < schedule[r].join || step >= schedule[r].join + schedule[r].steps) continue;
                runs[r].logits.insert(runs[r].logits.end(), pending[r].begin(), pending[r].end());
                runs[r].tokens.push_back(argmax(pending[r]));
                if (step + 1 == schedule[r].join + schedule[r].steps) {
                    session.truncate(slot[r], 0);
                    continue;
                }
                seqs.push_back(slot[r]);
                requests.push_back(r);
                tokens.push_back(runs[r].tokens.back());
            }
            CHECK(session.cells_in_use() == [&] {
                uint64_t total = 0;
                for (uint32_t s = 0; s < session.n_seq(); ++s) total += session.history(s).size();
                return total;
            }());
            if (seqs.empty()) continue;
            std::span<const float> logits = session.decode(seqs, tokens);
            for (size_t i = 0; i < seqs.size(); ++i)
                pending[requests[i]].assign(logits.begin() + int64_t(i * n_vocab), logits.begin() + int64_t((i + 1) * n_vocab));
        }
        for (uint32_t r = 0; r < schedule.size(); ++r) {
            CAPTURE(r);
            const Run reference = alone(model, prompts[r], schedule[r].steps);
            CHECK(runs[r].tokens == reference.tokens);
            test::check_runs_agree(runs[r].logits, reference.logits, n_vocab, tolerance);
        }
    });
}

// A sequence keeps a prefix and continues with other tokens while the others decode: as a fresh
// session given the prefix and the new tokens computes (Gemma 3's windows recomputed when the kept
// point is older than a window).
TEST_CASE("truncate keeps a sequence's prefix as recomputing it would, beside other sequences") {
    test::Float32Kernels fp32_arithmetic;
    for_each_model([](const std::string&, const model::Model& model, const std::vector<int32_t>& source) {
        const size_t n_vocab = model.info().n_vocab;
        const std::vector<int32_t> first = prompt(source, 20), other = prompt(source, 11);
        for (uint32_t keep : {3u, uint32_t(first.size()) - 2}) {
            CAPTURE(keep);
            model::Session session(test::device(), model, {.n_ctx = n_ctx, .n_seq = 3, .n_ubatch = n_ubatch});
            session.eval(0, other);
            session.eval(1, first);
            session.eval(2, other);
            const uint32_t seqs[] = {0, 1, 2};
            for (int32_t token : {5, 9, 17, 33}) {
                const int32_t tokens[] = {token, token + 1, token + 2};
                session.decode(seqs, tokens);
            }
            session.truncate(1, keep);
            CHECK(session.n_past(1) == keep);
            CHECK(std::ranges::equal(session.history(1), std::span(first).first(keep)));
            const std::vector<int32_t> suffix(source.begin() + 40, source.begin() + 52);
            std::vector<float> continued;
            session.eval(1, suffix, &continued);
            const int32_t next[] = {7, 8, 9};
            std::span<const float> decoded = session.decode(seqs, next);
            continued.insert(continued.end(), decoded.begin() + int64_t(n_vocab), decoded.begin() + int64_t(2 * n_vocab));

            std::vector<int32_t> recomputed(first.begin(), first.begin() + keep);
            recomputed.insert(recomputed.end(), suffix.begin(), suffix.end());
            recomputed.push_back(8);
            model::Session fresh(test::device(), model, {.n_ctx = n_ctx, .n_ubatch = n_ubatch});
            fresh.eval(std::span(recomputed).first(keep));
            std::vector<float> reference;
            fresh.eval(std::span(recomputed).subspan(keep), &reference);
            test::check_runs_agree(continued, reference, n_vocab, tolerance);
        }
    });
}

// The same schedule twice, sequence 2's prompt different the second time: every other sequence's
// logits are the same bits (rows of a batch never mix, and no sequence reads another's cells).
TEST_CASE("one sequence's tokens never change another's logits") {
    for_each_model([](const std::string&, const model::Model& model, const std::vector<int32_t>& source) {
        const uint32_t n_seq = 5;
        std::vector<std::vector<int32_t>> prompts;
        for (uint32_t s = 0; s < n_seq; ++s) prompts.push_back(prompt(source, s + 1));
        const std::vector<Schedule> schedule{{0, 12}, {0, 12}, {1, 10}, {3, 8}, {0, 12}};
        const std::vector<Run> runs = together(model, n_seq, prompts, schedule);
        prompts[2] = prompt(source, 17);
        const std::vector<Run> changed = together(model, n_seq, prompts, schedule);
        CHECK(runs[2].logits != changed[2].logits);
        for (uint32_t s : {0u, 1u, 3u, 4u}) {
            CAPTURE(s);
            CHECK(runs[s].logits == changed[s].logits);
        }
    });
}

// A prompt's every logit through chunks smaller than the session's sequence count (the chunk sizes the
// window caches were sized for): the same bits as in a session of its own.
TEST_CASE("a sequence's prefill with all logits, chunks smaller than the sequence count, matches it alone") {
    for_each_model([](const std::string&, const model::Model& model, const std::vector<int32_t>& source) {
        const std::vector<int32_t> tokens = prompt(source, 19);
        model::Session session(test::device(), model, {.n_ctx = n_ctx, .n_seq = 8, .n_ubatch = 2});
        session.eval(2, prompt(source, 4));
        std::vector<float> logits;
        session.eval(5, tokens, &logits);
        CHECK(logits == test::session_logits(model, tokens, 2));
    });
}

TEST_CASE("bad sequence numbers and decode steps are refused before anything runs") {
    const auto models = test_models();
    gguf::File file = gguf::File::open(models[0].path);
    auto model = model::load_model(test::device(), file);
    model::Session session(test::device(), *model, {.n_ctx = 8, .n_seq = 2, .n_ubatch = n_ubatch});
    const int32_t tokens[] = {1, 2};
    const uint32_t twice[] = {1, 1}, outside[] = {0, 2}, both[] = {0, 1};
    CHECK_THROWS_WITH_AS(session.eval(2, tokens), "sequence 2 does not exist: the session has 2", Error);
    CHECK_THROWS_WITH_AS(session.decode(twice, tokens), "sequence 1 is listed twice in one decode step", Error);
    CHECK_THROWS_WITH_AS(session.decode(outside, tokens), "sequence 2 does not exist: the session has 2", Error);
    CHECK_THROWS_WITH_AS(session.decode(std::span(both).first(1), tokens),
                         "a decode step needs one token per sequence (1 sequences, 2 tokens)", Error);
    CHECK(session.cells_in_use() == 0);
    session.eval(1, std::vector<int32_t>(8, 3));
    CHECK_THROWS_WITH_AS(session.decode(both, tokens), "sequence 1 has filled its context of 8 tokens", Error);
    CHECK(session.n_past(0) == 0);
    CHECK(session.cells_in_use() == 8);
    CHECK_THROWS_WITH_AS(model::Session(test::device(), *model, {.n_seq = 2, .kv_type = ops::KvType::Q8_0}),
                         "a q8_0 KV cache serves one sequence only (its scales follow all its cells' quants); use an "
                         "f16 cache", Error);
}

// A decode step over several sequences runs each layer's attention as one dispatch for all its rows
// (every family: GQA, MLA's latent, MiniMax's block selection and sparse attention), not one per
// sequence; a split-K pass adds one merge dispatch.
TEST_CASE("a decode step of 8 sequences runs one attention pass per layer") {
    for_each_model([](const std::string&, const model::Model& model, const std::vector<int32_t>&) {
        model::Session session(test::device(), model, {.n_ctx = n_ctx, .n_seq = 8, .n_ubatch = n_ubatch});
        graph::Graph g(test::device());
        session.build_graph(g, 8, true, false, UINT32_MAX);
        std::ostringstream dump;
        std::move(g).bake().dump(dump);
        std::map<std::string, uint32_t> pipelines;  // attention kernels by passes that run them
        std::istringstream lines(dump.str());
        for (std::string line; std::getline(lines, line);) {
            for (const char* kernel :
                 {"[attn_decode_merge", "[attn_decode", "[attn_prefill", "[msa_attention", "[msa_block_scores"}) {
                if (line.find(kernel) != std::string::npos) {
                    ++pipelines[kernel];
                    break;  // "[attn_decode_merge" also begins with "[attn_decode"
                }
            }
        }
        const uint32_t n_layer = model.info().n_layer;
        CHECK(pipelines["[attn_decode"] + pipelines["[msa_attention"] == n_layer);
        // A split attention pass merges its partial results in one dispatch after it.
        CHECK(pipelines["[attn_decode_merge"] <= pipelines["[attn_decode"]);
        CHECK(pipelines["[msa_block_scores"] <= n_layer);
        CHECK(pipelines["[attn_prefill"] == 0);
    });
}
