// vkllm shaders --stats [--all] -m MODEL [--device I|NAME] [--ubatch N]: creates every pipeline vkllm
// would create for the model on the device and prints the compiler's statistics for each: registers
// and spills under one name whatever the vendor calls them, then ACO's sizes and occupancy, or every
// other statistic the driver gives (--all, and drivers other than ACO). The pipelines
// come from building (not running) the session's graphs for decode and every prefill bucket up to
// n_ubatch, with either KV cache type, through the same ops the runs use: no list to keep in step.
// The device may be null hardware (RADV_FORCE_FAMILY=navi21 gives ACO's code for an RDNA2 GPU with
// no GPU present); the weights then get their place in memory but are never uploaded.
// Exits 1 when a pipeline spills registers; a pipeline that fails to compile fails the command.
#include <cstdio>
#include <optional>
#include <string>

#include "../commands.h"
#include "../model_options.h"
#include "../options.h"
#include "core/error.h"
#include "gguf/reader.h"
#include "gpu/compiler_stats.h"
#include "gpu/device.h"
#include "gpu/pipeline.h"
#include "graph/graph.h"
#include "model/model.h"
#include "model/session.h"

namespace vkllm::cli {
namespace {

struct ShaderOptions {
    bool stats = false, all = false;
    std::string model_path;
    std::optional<std::string> device;
    uint32_t n_ubatch = model::SessionOptions{}.n_ubatch;
};

// nullopt: --help was printed.
std::optional<ShaderOptions> parse_options(Args args) {
    ShaderOptions options;
    Options parser("shaders", "--stats [--all] -m MODEL [--device I|NAME] [--ubatch N]",
                   "Creates every pipeline vkllm would create for the model on the device and prints the compiler's "
                   "statistics of each; exits 1 when one spills registers.");
    parser.flag("--stats", options.stats, "print the compiler's statistics (the only report so far)")
        .required()
        .flag("--all", options.all, "every statistic the driver gives, not only registers, spills, sizes and occupancy")
        .add("-m,--model", options.model_path, "FILE", "the GGUF model")
        .required()
        .add("--device", options.device, "I|NAME", "the device, null hardware included (RADV_FORCE_FAMILY=navi21)")
        .add("--ubatch", options.n_ubatch, "N", "the largest prefill chunk whose graphs are built");
    if (!parser.parse(args)) return std::nullopt;
    if (options.n_ubatch == 0) fail("--ubatch must be at least 1");
    return options;
}

// Builds every graph a session runs, so that each op creates the pipelines it would use.
void create_pipelines(gpu::Device& device, const model::Model& model, uint32_t n_ubatch, ops::KvType kv_type) {
    model::Session session(device, model, {.n_ubatch = n_ubatch, .kv_type = kv_type});
    for (uint32_t n_tokens = 1; n_tokens <= session.n_ubatch(); n_tokens *= 2)
        for (bool all_logits : {false, true}) {
            graph::Graph graph(device);
            // An encoder's runs give hidden states, never logits.
            session.build_graph(graph, n_tokens, all_logits, false, 0, model.info().encoder);
        }
}

// The q8_0 cache as well, unless the model refuses it (MLA rows that are not whole blocks): a run
// with --kv-type q8_0 then fails the same way and creates none of its pipelines. A pipeline that
// fails to compile is never a refusal.
void create_pipelines_q8_0_cache(gpu::Device& device, const model::Model& model, uint32_t n_ubatch) {
    try {
        create_pipelines(device, model, n_ubatch, ops::KvType::Q8_0);
    } catch (const Error& error) {
        if (std::string_view(error.what()).find("vkCreateComputePipelines") != std::string_view::npos) throw;
        std::printf("note: --kv-type q8_0 is refused for this model (%s)\n", error.what());
    }
}

}  // namespace

int shaders(Args args) {
    const std::optional<ShaderOptions> parsed = parse_options(args);
    if (!parsed) return 0;
    const ShaderOptions& options = *parsed;
    gpu::Instance instance;
    gpu::Device device(instance, {.selector = options.device, .allow_null_hardware = true, .pipeline_statistics = true});
    gguf::File file = gguf::File::open(options.model_path);
    auto model = model::load_model(device, file);
    create_pipelines(device, *model, options.n_ubatch, ops::KvType::F16);
    create_pipelines_q8_0_cache(device, *model, options.n_ubatch);

    const gpu::Capabilities& caps = device.caps();
    std::printf("%s on %s%s: %zu pipelines\n", model->info().name.c_str(), caps.name.c_str(),
                caps.profile.empty() ? "" : (" (profile " + caps.profile + ")").c_str(), device.pipelines().created());
    gpu::StatisticsSummary summary;
    for (const auto& [key, pipeline] : device.pipelines().all())
        for (const gpu::ExecutableStatistics& executable : gpu::compiler_statistics(device, *pipeline)) {
            std::printf("%-48s %s\n", key.c_str(), gpu::statistics_line(executable, options.all).c_str());
            summary.add(executable);
        }
    std::printf("summary: %zu pipelines, %s\n", device.pipelines().created(), summary.text().c_str());
    return summary.spilling ? 1 : 0;
}

}  // namespace vkllm::cli
