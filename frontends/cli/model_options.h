#pragma once
// What the model commands (run, chat, eval, perplexity, bench) share: their common options, opening
// the engine with a progress line, and the stats they report.
#include <memory>
#include <optional>
#include <string>

#include "commands.h"
#include "engine/engine.h"
#include "options.h"
#include "sampling/sampler.h"

namespace vkllm::cli {

struct ModelOptions {
    std::string model_path;
    uint32_t n_ctx = 0;
    std::optional<std::string> device;
    ops::KvType kv_type = ops::KvType::F16;
    bool verbose = false;
    bool no_mmap = false, mlock = false;
    std::string dump_graph_path, stats_json_path;

    void declare(Options& options);
    // After parsing: the report files can be written (checked before any work).
    void check() const;
};

// --kv-type's value.
ops::KvType parse_kv_type(std::string_view value);

// --grammar, --grammar-file, --json-schema, --json-schema-file: at most one of them.
struct GrammarOptions {
    std::string grammar, grammar_file, json_schema, json_schema_file;

    void declare(Options& options);
    // The grammar they give, compiled (null when none); throws naming the option and the place in
    // the grammar or schema that is wrong.
    std::shared_ptr<const sampling::Grammar> resolve() const;
};

struct SamplingOptions {
    sampling::SamplerParams params;
    int64_t seed = -1;  // -1: a new one each run
    GrammarOptions grammar;

    void declare(Options& options);
    // The parameters range-checked, the seed drawn when -1 (and printed with --verbose), the grammar compiled.
    sampling::SamplerParams resolve(bool verbose) const;
};

// Opens the model of the options (and an mmproj, a chat template file) with a progress line on a
// terminal, says once where weights went when some did not fit in device-local memory, and with
// --verbose prints the memory plan and what was loaded.
std::unique_ptr<engine::Engine> open_engine(const ModelOptions& options, const std::string& mmproj_path = {},
                                            const std::string& chat_template_path = {}, uint32_t n_seq = 1);

// -n as llama-cli takes it: a count, or -1 for no limit (UINT32_MAX); anything else fails.
uint32_t token_limit(int32_t n_predict);

// The prompt run on the engine's session; one of more than four chunks reports its progress on stderr.
std::span<const float> run_prompt(engine::Engine& engine, std::span<const int32_t> tokens);

// --dump-graph and --stats-json, once the session has run; with --verbose, the memory the process and
// the device held at their peak beside the plan.
void write_reports(const ModelOptions& options, engine::Engine& engine);

// The most resident memory the process has held (VmHWM), in bytes; 0 where the system does not say.
uint64_t peak_resident_bytes();

}  // namespace vkllm::cli
