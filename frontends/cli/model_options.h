#pragma once
// What the model commands (run, chat, eval) share: their common options, loading a model with a
// progress line and a memory check, and the stats they report.
#include <memory>
#include <optional>
#include <string>

#include "commands.h"
#include "gguf/reader.h"
#include "gpu/device.h"
#include "model/session.h"
#include "sampling/sampler.h"
#include "tokenizer/tokenizer.h"

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

// A model ready to run: the device, the file (its tensors are views into the mapping), the weights
// on the GPU, the tokenizer and one session.
struct LoadedModel {
    gpu::Instance instance;
    gpu::Device device;
    gguf::File file;
    std::unique_ptr<model::Model> model;
    tokenizer::Tokenizer tokenizer;
    std::unique_ptr<model::Session> session;

    explicit LoadedModel(const ModelOptions& options);
};

// --dump-graph and --stats-json, once the session has run.
void write_reports(const ModelOptions& options, LoadedModel& loaded);

// Parses a number option's value, naming the option when it is not one.
uint32_t parse_count(std::string_view option, std::string_view value);
float parse_float(std::string_view option, std::string_view value);

}  // namespace vkllm::cli
