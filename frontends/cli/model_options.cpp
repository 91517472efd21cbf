#include "model_options.h"

#include <charconv>
#include <cstdio>
#include <fstream>
#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.h"

namespace vkllm::cli {

uint32_t parse_count(std::string_view option, std::string_view value) {
    uint32_t number = 0;
    auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), number);
    if (error != std::errc() || end != value.data() + value.size())
        fail("{} expects a non-negative whole number, not '{}'", option, value);
    return number;
}

float parse_float(std::string_view option, std::string_view value) {
    std::string text(value);
    char* end = nullptr;
    float number = std::strtof(text.c_str(), &end);
    if (text.empty() || *end != '\0') fail("{} expects a number, not '{}'", option, value);
    return number;
}

bool ModelOptions::parse(Args args, size_t& i) {
    std::string_view arg = args[i];
    bool has_value = i + 1 < args.size();
    if (arg == "--verbose") return verbose = true;
    if (!has_value) return false;
    std::string_view value = args[i + 1];
    if (arg == "-m" || arg == "--model") model_path = value;
    else if (arg == "-c" || arg == "--ctx-size") n_ctx = parse_count(arg, value);
    else if (arg == "--device") device = std::string(value);
    else if (arg == "--dump-graph") dump_graph_path = value;
    else if (arg == "--stats-json") stats_json_path = value;
    else if (arg == "--kv-type") {
        if (value == "f16") kv_type = ops::KvType::F16;
        else if (value == "q8_0") kv_type = ops::KvType::Q8_0;
        else fail("--kv-type must be f16 or q8_0, not '{}'", value);
    } else {
        return false;
    }
    ++i;
    return true;
}

bool SamplingOptions::parse(Args args, size_t& i) {
    if (i + 1 >= args.size()) return false;
    std::string_view arg = args[i], value = args[i + 1];
    if (arg == "--temp") params.temperature = parse_float(arg, value);
    else if (arg == "--top-k") params.top_k = int(parse_count(arg, value));
    else if (arg == "--top-p") params.top_p = parse_float(arg, value);
    else if (arg == "--min-p") params.min_p = parse_float(arg, value);
    else if (arg == "--repeat-penalty") params.repeat_penalty = parse_float(arg, value);
    else if (arg == "--seed") params.seed = parse_count(arg, value);
    else return false;
    ++i;
    return true;
}

namespace {

model::WeightLoader::Progress load_progress() {
    // One progress line, rewritten in place, and only on a terminal.
    if (!isatty(fileno(stderr))) return {};
    return [last = -1](uint64_t done, uint64_t total) mutable {
        int percent = total ? int(100 * done / total) : 100;
        if (percent == last) return;
        last = percent;
        std::fprintf(stderr, "\rloading weights: %3d%%%s", percent, percent == 100 ? "\n" : "");
    };
}

}  // namespace

std::unique_ptr<engine::Engine> open_engine(const ModelOptions& options, const std::string& mmproj_path,
                                            const std::string& chat_template_path, uint32_t n_seq) {
    auto engine = std::make_unique<engine::Engine>(engine::EngineOptions{
        .model_path = options.model_path, .device = options.device, .n_ctx = options.n_ctx, .n_seq = n_seq,
        .kv_type = options.kv_type, .mmproj_path = mmproj_path, .chat_template_path = chat_template_path,
        .progress = load_progress()});
    if (options.verbose) {
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

void write_reports(const ModelOptions& options, engine::Engine& engine) {
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
