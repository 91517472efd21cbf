// vkllm tune -m MODEL [--repeat N] [--budget S] [--op matvec|matmul] [--json] [--device I|NAME]:
// times the launch shapes around the device's own choice for a model's hot operations on the device at
// hand and keeps the fastest per device and driver in the cache directory (ops/tuning.h), where
// matvec_config and matmul_config take them from then on: matvec on one vector and on 8 (a decode step, a server's
// batch) for each weight type and row length of the model, on its own weights; matmul tiles on 64
// tokens for each weight type, in the kernel the device runs (the cooperative-matrix and int8 kernels
// keep their tile). Every candidate passes the kernel's config check, the launches the op tests
// cover, so results stay within each kernel's tolerance.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "core/error.h"
#include "gguf/reader.h"
#include "gpu/device.h"
#include "gpu/dispatch.h"
#include "gpu/memory.h"
#include "gpu/transfer.h"
#include "op_timing.h"
#include "ops/matmul.h"
#include "ops/matvec.h"
#include "ops/tuning.h"
#include "options.h"

namespace vkllm::cli {
namespace {

constexpr uint32_t batch_tokens = 8;      // matvec's largest batch (ops::matvec_max_tokens)
constexpr uint32_t prefill_tokens = 64;   // the matmul tiles' measure

// The largest 2D weight of each type and row length: what the model's projections run on.
std::map<std::pair<gguf::GgmlType, uint32_t>, const gguf::Tensor*> weight_shapes(const gguf::File& file) {
    std::map<std::pair<gguf::GgmlType, uint32_t>, const gguf::Tensor*> shapes;
    for (const gguf::Tensor& tensor : file.tensors()) {
        if (tensor.n_dims != 2 || tensor.ne[1] < 2 || !gguf::runs_on_vkllm(tensor.type)) continue;
        const auto key = std::pair{tensor.type, uint32_t(tensor.ne[0])};
        if (auto& largest = shapes[key]; !largest || largest->ne[1] < tensor.ne[1]) largest = &tensor;
    }
    return shapes;
}

// A candidate's pipeline is compiled on its first run: on lavapipe (LLVM) a texel-read matmul tile of
// 16 tokens took 60 s to compile and an 8-row matvec batch 8-13 s, so a search over every shape the
// kernels accept (34 launches for stories260K) ran minutes, 19 on a loaded machine. The search keeps
// to the device's own choice and its neighbours, one step along one axis at a time, smallest code
// (fewest rows and tokens unrolled per invocation) first, and starts no candidate past the op's budget.

// The device's launch, then the neighbours the kernel accepts: half and twice the rows per team, the
// next smaller and larger team (1 thread, 1, 2 or 4 subgroups), in the device's workgroup widened
// to a whole team.
std::vector<ops::MatvecConfig> matvec_candidates(const gpu::Capabilities& caps, gguf::GgmlType type, uint32_t cols,
                                                 uint32_t n_tokens) {
    const ops::MatvecConfig chosen = ops::matvec_config(caps, type, cols, n_tokens);
    const uint32_t subgroup = std::max(caps.max_subgroup_size, caps.subgroup_size);
    const std::vector<uint32_t> teams = {1u, subgroup, 2 * subgroup, 4 * subgroup};
    std::vector<std::pair<uint32_t, uint32_t>> shapes = {{chosen.threads_per_row, chosen.rows_per_team / 2},
                                                         {chosen.threads_per_row, chosen.rows_per_team * 2}};
    if (const auto smaller = std::ranges::lower_bound(teams, chosen.threads_per_row); smaller != teams.begin())
        shapes.emplace_back(*(smaller - 1), chosen.rows_per_team);
    if (const auto larger = std::ranges::upper_bound(teams, chosen.threads_per_row); larger != teams.end())
        shapes.emplace_back(*larger, chosen.rows_per_team);
    std::vector<ops::MatvecConfig> candidates;
    for (const auto& [team, rows] : shapes) {
        ops::MatvecConfig config = chosen;
        config.threads_per_row = team;
        config.rows_per_team = rows;
        config.workgroup_size = (std::max(chosen.workgroup_size, team) + team - 1) / team * team;
        try {
            ops::check_matvec_config(config, caps, type);
        } catch (const Error&) {
            continue;
        }
        candidates.push_back(config);
    }
    std::ranges::sort(candidates, {},
                      [](const ops::MatvecConfig& c) { return std::pair{c.rows_per_team, c.threads_per_row}; });
    candidates.insert(candidates.begin(), chosen);
    return candidates;
}

// The device's tile, then its neighbours the kernel accepts: half and twice the rows, half and twice
// the tokens. The cooperative-matrix and int8 kernels keep their tile.
std::vector<ops::MatmulConfig> matmul_candidates(const gpu::Capabilities& caps, gguf::GgmlType type) {
    const ops::MatmulConfig chosen = ops::matmul_config(caps, type);
    std::vector<ops::MatmulConfig> candidates;
    if (chosen.coopmat || chosen.int8_activations) return {chosen};
    for (const auto& [rows, tokens] : {std::pair{chosen.tile_rows / 2, chosen.tile_tokens},
                                      std::pair{chosen.tile_rows * 2, chosen.tile_tokens},
                                      std::pair{chosen.tile_rows, chosen.tile_tokens / 2},
                                      std::pair{chosen.tile_rows, chosen.tile_tokens * 2}}) {
        ops::MatmulConfig config = chosen;
        config.tile_rows = rows;
        config.tile_tokens = tokens;
        try {
            ops::check_matmul_config(config, caps, type, "matmul");
        } catch (const Error&) {
            continue;
        }
        candidates.push_back(config);
    }
    std::ranges::sort(candidates, {}, [](const ops::MatmulConfig& c) { return std::pair{c.tile_tokens, c.tile_rows}; });
    candidates.insert(candidates.begin(), chosen);
    return candidates;
}

// Milliseconds of each candidate in turn while the op's budget lasts: the device's choice (first) is
// always timed, a candidate once started runs to the end (its compile cannot be cut short).
template <typename Config>
std::vector<double> time_candidates(const std::vector<Config>& candidates, double budget_s, const auto& time_one) {
    const auto start = std::chrono::steady_clock::now();
    std::vector<double> ms;
    for (const Config& config : candidates) {
        if (!ms.empty() && std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > budget_s)
            break;
        ms.push_back(time_one(config));
    }
    return ms;
}

gpu::Buffer upload_tensor(gpu::Device& device, const gguf::Tensor& tensor) {
    gpu::Buffer buffer = device.allocator().create(tensor.nbytes, gpu::MemoryDomain::Device, tensor.row_bytes());
    gpu::Transfer transfer(device);
    transfer.upload(buffer, 0, tensor.data);
    transfer.flush();
    return buffer;
}

gpu::Buffer ones(gpu::Device& device, uint64_t floats) {
    gpu::Buffer buffer = device.allocator().create(floats * 4, gpu::MemoryDomain::Device);
    gpu::Commands fill(device);
    for (const gpu::BufferRange& segment : buffer.segments()) fill.fill(segment, 0x3f800000u);
    fill.submit_and_wait();
    return buffer;
}

}  // namespace

int tune(Args args) {
    std::string model_path;
    uint32_t repeat = 10;
    float budget_s = 5;
    std::string only_op;
    bool json = false;
    std::optional<std::string> selector;
    Options parser("tune", "-m MODEL [--repeat N] [--budget S] [--op matvec|matmul] [--json] [--device I|NAME]",
                   "Times the launch shapes of the model's matvecs (1 and 8 vectors) and matmul tiles on this device "
                   "and keeps the fastest in the cache directory, used from then on (vkllm devices shows them).");
    parser.add("-m,--model", model_path, "FILE", "the GGUF model whose weights to tune for")
        .required()
        .add("--repeat", repeat, "N", "timed runs of each candidate; the fastest counts")
        .add("--budget", budget_s, "S",
             "seconds per op after which no further candidate starts (the device's choice always runs)")
        .add("--op", only_op, "matvec|matmul", "tune only this op")
        .flag("--json", json, "print the measurements as JSON")
        .add("--device", selector, "I|NAME", "the device, by index or part of its name");
    if (!parser.parse(args)) return 0;
    if (repeat == 0) fail("--repeat must be at least 1");
    if (!(budget_s >= 0)) fail("--budget must be a number of seconds, 0 or more");
    if (!only_op.empty() && only_op != "matvec" && only_op != "matmul")
        fail("--op must be matvec or matmul, not {}", only_op);
    const bool tune_matvec = only_op != "matmul", tune_matmul = only_op != "matvec";
    const gguf::File file = gguf::File::open(model_path);
    // Measure the kernels' own choices, not those of an earlier tuning.
    setenv("VKLLM_TUNING", "0", 1);
    gpu::Instance instance;
    gpu::Device device(instance, selector);
    const gpu::Capabilities& caps = device.caps();
    if (!caps.profile.empty())
        fail("tuning measures the device as it is: unset VKLLM_DEVICE_PROFILE ({})", caps.profile);
    const Timing timing{repeat, true};
    const auto shapes = weight_shapes(file);
    if (shapes.empty()) fail("{} holds no 2D weights vkllm runs", model_path);

    ops::Tuning tuning;
    nlohmann::json report = {{"device", caps.name}, {"key", ops::tuning_key(caps)}, {"matvec", nlohmann::json::array()},
                             {"matmul", nlohmann::json::array()}};
    std::map<gguf::GgmlType, const gguf::Tensor*> largest_of_type;
    for (const auto& [key, tensor] : shapes) {
        const auto [type, cols] = key;
        const auto rows = uint32_t(tensor->ne[1]);
        if (auto& largest = largest_of_type[type]; !largest || largest->nbytes < tensor->nbytes) largest = tensor;
        if (!tune_matvec) continue;
        gpu::Buffer weights = upload_tensor(device, *tensor);
        gpu::Buffer x = ones(device, uint64_t(batch_tokens) * cols), y = ones(device, uint64_t(batch_tokens) * rows);
        for (uint32_t n_tokens : {1u, batch_tokens}) {
            const std::vector<ops::MatvecConfig> candidates = matvec_candidates(caps, type, cols, n_tokens);
            const std::vector<double> ms = time_candidates(candidates, budget_s, [&](const ops::MatvecConfig& config) {
                return op_ms(device, timing, [&](graph::Graph& g) {
                    const ops::WeightMatrix w = ops::weight_matrix(g, "w", type, rows, cols, weights);
                    const graph::Region xr = g.persistent("x", x.range()), yr = g.persistent("y", y.range());
                    return n_tokens == 1 ? ops::matvec(device, w, xr, yr, false, config)
                                         : ops::matvec_batch(device, w, xr, yr, n_tokens, false, config);
                });
            });
            const size_t best = size_t(std::ranges::min_element(ms) - ms.begin());
            const ops::TunedMatvec entry{.type = type, .cols = cols, .batch = n_tokens > 1,
                                         .workgroup_size = candidates[best].workgroup_size,
                                         .threads_per_row = candidates[best].threads_per_row,
                                         .rows_per_team = candidates[best].rows_per_team};
            tuning.matvec.push_back(entry);
            report["matvec"].push_back({{"type", std::string(gguf::type_name(type))}, {"rows", rows}, {"cols", cols},
                                        {"tokens", n_tokens}, {"candidates", ms.size()},
                                        {"default_ms", ms[0]}, {"best_ms", ms[best]}, {"best", ops::describe(entry)}});
        }
    }
    for (const auto& [type, tensor] : largest_of_type) {
        if (!tune_matmul) break;
        const auto rows = uint32_t(tensor->ne[1]), cols = uint32_t(tensor->ne[0]);
        const std::vector<ops::MatmulConfig> candidates = matmul_candidates(caps, type);
        if (candidates.size() < 2) continue;  // a kernel whose tile is fixed
        gpu::Buffer weights = upload_tensor(device, *tensor);
        gpu::Buffer x = ones(device, uint64_t(prefill_tokens) * cols), y = ones(device, uint64_t(prefill_tokens) * rows);
        const std::vector<double> ms = time_candidates(candidates, budget_s, [&](const ops::MatmulConfig& config) {
            return op_ms(device, timing, [&](graph::Graph& g) {
                const ops::WeightMatrix w = ops::weight_matrix(g, "w", type, rows, cols, weights);
                return ops::matmul(device, w, g.persistent("x", x.range()), g.persistent("y", y.range()),
                                   prefill_tokens, false, config);
            });
        });
        const size_t best = size_t(std::ranges::min_element(ms) - ms.begin());
        const ops::TunedMatmul entry{.type = type, .texel_reads = candidates[best].texel_reads,
                                     .tile_rows = candidates[best].tile_rows, .tile_tokens = candidates[best].tile_tokens};
        tuning.matmul.push_back(entry);
        report["matmul"].push_back({{"type", std::string(gguf::type_name(type))}, {"rows", rows}, {"cols", cols},
                                    {"tokens", prefill_tokens}, {"candidates", ms.size()},
                                    {"default_ms", ms[0]}, {"best_ms", ms[best]}, {"best", ops::describe(entry)}});
    }
    ops::save_tuning(tuning, caps);
    report["file"] = ops::tuning_path(caps).string();
    if (json) {
        std::printf("%s\n", report.dump(2).c_str());
        return 0;
    }
    std::printf("device: %s\ntuning: %s\n\n| op | weights | tokens | candidates | default ms | best ms | best |\n"
                "|---|---|---:|---:|---:|---:|---|\n",
                caps.name.c_str(), report["file"].get<std::string>().c_str());
    for (const char* op : {"matvec", "matmul"})
        for (const nlohmann::json& row : report[op])
            std::printf("| %s | %s %u x %u | %u | %zu | %.4f | %.4f | %s |\n", op,
                        row["type"].get<std::string>().c_str(), row["rows"].get<uint32_t>(), row["cols"].get<uint32_t>(),
                        row["tokens"].get<uint32_t>(), row["candidates"].get<size_t>(), row["default_ms"].get<double>(),
                        row["best_ms"].get<double>(), row["best"].get<std::string>().c_str());
    return 0;
}

}  // namespace vkllm::cli
