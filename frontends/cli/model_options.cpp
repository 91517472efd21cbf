#include "model_options.h"

#include <cstdio>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/file.h"
#include "progress.h"
#include "sampling/json_schema.h"

namespace vkllm::cli {

void ModelOptions::declare(Options& options) {
    options.section("model")
        .add("-m,--model", model_path, "FILE", "the GGUF model")
        .required()
        .add("-c,--ctx-size", n_ctx, "N", "context size in tokens; 0: the model's own, at most 4096")
        .add("--device", device, "I|NAME", "the Vulkan device by index or part of its name (vkllm devices lists them)")
        .add("--kv-type", [this](std::string_view value) { kv_type = parse_kv_type(value); }, "f16|q8_0",
             "the KV cache's cell type", "f16")
        .flag("--verbose", verbose, "print the memory plan, load time, KV cache size and the sampling seed")
        .flag("--no-mmap", no_mmap, "read the model file into memory instead of mapping it")
        .flag("--mlock", mlock, "keep the weights in RAM, never swapped out (fails beyond `ulimit -l`)")
        .add("--dump-graph", dump_graph_path, "FILE", "write the baked decode graph as text")
        .add("--stats-json", stats_json_path, "FILE", "write the decode graph's passes, dispatches, barriers and timings")
        .ignored("-ngl,--n-gpu-layers,--gpu-layers", true, "every layer runs on the Vulkan device")
        .ignored("-t,--threads", true, "the Vulkan device does the work; lavapipe takes LP_NUM_THREADS");
}

ops::KvType parse_kv_type(std::string_view value) {
    if (value == "f16") return ops::KvType::F16;
    if (value == "q8_0") return ops::KvType::Q8_0;
    fail("--kv-type must be f16 or q8_0, not '{}'", value);
}

void ModelOptions::check() const {
    if (!dump_graph_path.empty()) check_writable("--dump-graph", dump_graph_path);
    if (!stats_json_path.empty()) check_writable("--stats-json", stats_json_path);
}

void GrammarOptions::declare(Options& options) {
    options.section("constrained output")
        .add("--grammar", grammar, "GBNF", "generated text must match this GBNF grammar (llama.cpp's syntax; 'root' starts it)")
        .add("--grammar-file", grammar_file, "FILE", "the GBNF grammar from a file")
        .add("-j,--json-schema", json_schema, "JSON", "generated text must be JSON valid under this JSON Schema ('{}': any object)")
        .add("--json-schema-file", json_schema_file, "FILE", "the JSON Schema from a file");
}

std::shared_ptr<const sampling::Grammar> GrammarOptions::resolve() const {
    const int given = !grammar.empty() + !grammar_file.empty() + !json_schema.empty() + !json_schema_file.empty();
    if (given > 1) fail("give one of --grammar, --grammar-file, --json-schema and --json-schema-file");
    const auto compile = [](const std::string& where, const auto& make) -> std::shared_ptr<const sampling::Grammar> {
        try {
            return make();
        } catch (const Error& error) {
            fail("{}: {}", where, error.what());
        }
    };
    if (!grammar.empty()) return compile("--grammar", [&] { return sampling::Grammar::parse(grammar); });
    if (!grammar_file.empty())
        return compile("--grammar-file " + grammar_file,
                       [&] { return sampling::Grammar::parse(read_text_file(grammar_file, "grammar file")); });
    if (!json_schema.empty())
        return compile("--json-schema", [&] { return sampling::json_schema_grammar(sampling::parse_json_schema(json_schema)); });
    if (!json_schema_file.empty())
        return compile("--json-schema-file " + json_schema_file, [&] {
            return sampling::json_schema_grammar(sampling::parse_json_schema(read_text_file(json_schema_file, "JSON schema file")));
        });
    return nullptr;
}

void SamplingOptions::declare(Options& options) {
    options.section("sampling")
        .add("--temp", params.temperature, "T", "temperature; 0 always picks the most likely token")
        .add("--top-k", params.top_k, "K", "keep the K most likely tokens; 0: off")
        .add("--top-p", params.top_p, "P", "keep the most likely tokens up to probability P, in (0, 1]; 1: off")
        .add("--min-p", params.min_p, "P", "drop tokens below P times the most likely one's probability, in [0, 1]")
        .add("--repeat-penalty", params.repeat_penalty, "R", "divide the logits of recent tokens by R (> 0); 1: off")
        .add("--repeat-last-n", params.penalty_last_n, "N", "how many recent tokens the penalties see; 0: off, -1: all")
        .add("--presence-penalty", params.presence_penalty, "A", "subtract A from the logit of each recent token")
        .add("--frequency-penalty", params.frequency_penalty, "A", "subtract A per occurrence of each recent token")
        .add("-s,--seed", seed, "S", "the sampling seed; -1: a new one each run");
    grammar.declare(options);
}

sampling::SamplerParams SamplingOptions::resolve(bool verbose) const {
    sampling::validate(params, {.temperature = "--temp", .top_k = "--top-k", .top_p = "--top-p", .min_p = "--min-p",
                                .repeat_penalty = "--repeat-penalty", .frequency_penalty = "--frequency-penalty",
                                .presence_penalty = "--presence-penalty", .penalty_last_n = "--repeat-last-n"});
    if (seed < -1) fail("--seed must be -1 (a new seed each run) or a whole number of at least 0, not {}", seed);
    sampling::SamplerParams resolved = params;
    resolved.seed = seed == -1 ? sampling::random_seed() : uint64_t(seed);
    resolved.grammar = grammar.resolve();
    if (verbose) std::fprintf(stderr, "sampling seed: %llu\n", (unsigned long long)resolved.seed);
    return resolved;
}

std::unique_ptr<engine::Engine> open_engine(const ModelOptions& options, const std::string& mmproj_path,
                                            const std::string& chat_template_path, uint32_t n_seq) {
    // The report is only called while the engine opens (the weights upload).
    ProgressReport report("loading weights");
    auto engine = std::make_unique<engine::Engine>(engine::EngineOptions{
        .model_path = options.model_path, .device = options.device, .n_ctx = options.n_ctx, .n_seq = n_seq,
        .kv_type = options.kv_type, .mmproj_path = mmproj_path, .chat_template_path = chat_template_path,
        .progress = [&report](uint64_t done, uint64_t total) { report.update(done, total); },
        .mmap = !options.no_mmap, .mlock = options.mlock});
    const model::MemoryPlan& plan = engine->memory_plan();
    if (plan.weights_host)
        std::fprintf(stderr, "%.1f MiB of weights do not fit in the %.1f MiB of device-local memory left: %s (%.1f MiB) "
                             "run from host memory, slower\n", plan.weights_host / 1048576.0,
                     (plan.budget.device_local - std::min(plan.budget.device_local, plan.kv + plan.compute)) / 1048576.0,
                     plan.host_units.c_str(), plan.weights_host / 1048576.0);
    if (options.verbose) {
        const std::string text = plan.describe();
        std::fwrite(text.data(), 1, text.size(), stderr);
        const model::ModelInfo& info = engine->info();
        const model::Session& session = engine->session();
        std::fprintf(stderr, "model: %s (%s), %u layers, vocabulary %u; weights %.1f MiB loaded in %.2f s on %s\n",
                     info.name.c_str(), info.arch.c_str(), info.n_layer, info.n_vocab, info.weight_bytes / 1048576.0,
                     engine->load_seconds(), engine->device().caps().name.c_str());
        std::fprintf(stderr, "KV cache: %u tokens, %.2f MiB (%s)\n", session.n_ctx(), session.kv_bytes() / 1048576.0,
                     options.kv_type == ops::KvType::F16 ? "f16" : "q8_0");
        for (const model::KvLayerKind& kind : model::kv_cache_kinds(engine->model().kv_layout(), session.n_ctx(),
                                                                    session.n_ubatch(), options.kv_type)) {
            const std::string what = kind.window ? fmt::format("sliding-window layers (window {})", kind.window)
                                                 : std::string("full-context layers");
            std::fprintf(stderr, "  %u %s: %u cells each, %.2f MiB\n", kind.n_layers, what.c_str(), kind.n_cells,
                         kind.bytes / 1048576.0);
        }
    }
    return engine;
}

uint32_t token_limit(int32_t n_predict) {
    if (n_predict < -1) fail("-n must be -1 (until the context is full) or at least 0, not {}", n_predict);
    return n_predict == -1 ? UINT32_MAX : uint32_t(n_predict);
}

std::span<const float> run_prompt(engine::Engine& engine, std::span<const int32_t> tokens) {
    model::Session& session = engine.session();
    if (tokens.size() <= 4 * size_t(session.n_ubatch())) return session.eval(tokens);
    ProgressReport report(fmt::format("prompt of {} tokens", tokens.size()));
    return engine::prefill(session, 0, tokens, [&report](uint64_t done, uint64_t total) { report.update(done, total); });
}

uint64_t peak_resident_bytes() {
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);)
        if (line.starts_with("VmHWM:")) return std::stoull(line.substr(6)) * 1024;  // "VmHWM:   123456 kB"
    return 0;
}

void write_reports(const ModelOptions& options, engine::Engine& engine) {
    if (options.verbose) {
        const gpu::MemoryStats stats = engine.device().allocator().stats();
        std::fprintf(stderr, "memory: %.1f MiB planned; device allocations peaked at %.1f MiB; the process peaked at "
                             "%.1f MiB resident\n", engine.memory_plan().total() / 1048576.0,
                     stats.peak_used_bytes / 1048576.0, peak_resident_bytes() / 1048576.0);
    }
    if (!options.dump_graph_path.empty()) {
        std::ofstream out(options.dump_graph_path);
        engine.session().dump_decode_graph(out);
        if (!out) fail("cannot write {}", options.dump_graph_path);
    }
    if (!options.stats_json_path.empty()) {
        const graph::GraphStats& s = engine.session().decode_stats();
        nlohmann::json json = {
            {"decode_graph",
             {{"passes", s.passes}, {"dispatches", s.dispatches}, {"barriers", s.barriers},
              {"transient_bytes", s.transient_bytes}, {"transient_bytes_aliased", s.transient_bytes_aliased},
              {"weight_bytes", s.weight_bytes}, {"recordings", s.recordings}, {"replays", s.replays},
              {"record_ms", s.record_ms}, {"submit_ms", s.submit_ms}}},
            {"graphs_recorded", engine.session().graphs_recorded()},
            {"replays", engine.session().replays()},
            {"kv_cache_bytes", engine.session().kv_bytes()},
        };
        std::ofstream out(options.stats_json_path);
        out << json.dump(2) << "\n";
        if (!out) fail("cannot write {}", options.stats_json_path);
    }
}

}  // namespace vkllm::cli
