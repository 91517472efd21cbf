#pragma once
// What the model commands (run, chat, eval, perplexity, bench) share: their common options, opening
// the engine with a progress line, and the stats they report.
#include <memory>
#include <optional>
#include <string>

#include "commands.h"
#include "engine/engine.h"
#include "sampling/sampler.h"

namespace vkllm::cli {

struct ModelOptions {
    std::string model_path;
    uint32_t n_ctx = 0;
    std::optional<std::string> device;
    ops::KvType kv_type = ops::KvType::F16;
    bool verbose = false;
    std::string dump_graph_path, stats_json_path;

    // Consumes args[i] (and its value) when it is one of these options.
    bool parse(Args args, size_t& i);
    static constexpr const char* usage =
        "-m MODEL [-c CTX] [--device I|NAME] [--kv-type f16|q8_0] [--verbose] [--dump-graph FILE] [--stats-json FILE]";
};

struct SamplingOptions {
    sampling::SamplerParams params;
    bool parse(Args args, size_t& i);
    static constexpr const char* usage =
        "[--temp T] [--top-k K] [--top-p P] [--min-p M] [--repeat-penalty R] [--seed S]";
};

// Opens the model of the options (and an mmproj, a chat template file) with a progress line on a
// terminal, and with --verbose prints what was loaded.
std::unique_ptr<engine::Engine> open_engine(const ModelOptions& options, const std::string& mmproj_path = {},
                                            const std::string& chat_template_path = {}, uint32_t n_seq = 1);

// --dump-graph and --stats-json, once the session has run.
void write_reports(const ModelOptions& options, engine::Engine& engine);

// Parses a number option's value, naming the option when it is not one.
uint32_t parse_count(std::string_view option, std::string_view value);
float parse_float(std::string_view option, std::string_view value);

}  // namespace vkllm::cli
