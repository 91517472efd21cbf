// bench_graph: what replaying a baked graph costs the host. Builds a decode-shaped chain of small
// passes, replays it, and reports the host time inside vkQueueSubmit, the wall time per replay, and
// the same with barriers omitted (to price them).
// Usage: bench_graph [--passes N] [--replays R] [--dump-graph FILE]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/error.h"
#include "gpu/device.h"
#include "gpu/transfer.h"
#include "graph/baked.h"
#include "params.h"

using namespace vkllm;

namespace {

struct Options {
    int passes = 96;  // about 6 per layer for 16 layers
    int replays = 2000;
    std::string dump_path;
};

Options parse(int argc, char** argv) {
    Options options;
    for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        if (arg == "--passes" && i + 1 < argc) options.passes = std::stoi(argv[++i]);
        else if (arg == "--replays" && i + 1 < argc) options.replays = std::stoi(argv[++i]);
        else if (arg == "--dump-graph" && i + 1 < argc) options.dump_path = argv[++i];
        else fail("unknown argument '{}' (usage: bench_graph [--passes N] [--replays R] [--dump-graph FILE])", arg);
    }
    if (options.passes < 1 || options.replays < 1) fail("--passes and --replays must be positive");
    return options;
}

struct Result {
    double submit_us, replay_us, record_ms;
    size_t barriers;
};

Result measure(gpu::Device& device, const Options& options, bool omit_barriers, const gpu::Buffer& step,
               const gpu::Buffer& input, const gpu::Buffer& output) {
    constexpr uint32_t n = 256;
    const gpu::Pipeline& pipeline = device.pipelines().get("graph_scale_step", {{0, 64}});
    graph::Graph g(device);
    auto step_region = g.persistent("step", step.range());
    graph::Region previous = g.persistent("x", input.range());
    for (int p = 0; p < options.passes; ++p) {
        graph::Region next = p + 1 == options.passes ? g.persistent("out", output.range())
                                                     : g.transient(fmt::format("t{}", p), n * sizeof(float));
        g.add_pass(fmt::format("pass{}", p), pipeline)
            .read(step_region).read(previous).write(next)
            .params(params::GraphScaleParams{n, 0, 1.0f})
            .threads(n);
        previous = next;
    }
    graph::BakedGraph baked = std::move(g).bake({.omit_barriers = omit_barriers});
    if (!options.dump_path.empty() && !omit_barriers) {
        std::ofstream out(options.dump_path);
        baked.dump(out);
    }
    for (int i = 0; i < 20; ++i) baked.replay();  // warm up: first-touch faults, worker threads
    double submit_before = baked.stats().submit_ms;
    auto started = std::chrono::steady_clock::now();
    for (int i = 0; i < options.replays; ++i) {
        uint32_t value = 1 + i % 3;
        step.write(0, std::as_bytes(std::span(&value, 1)));
        baked.replay();
    }
    double wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
    return {(baked.stats().submit_ms - submit_before) * 1e3 / options.replays, wall_ms * 1e3 / options.replays,
            baked.stats().record_ms, baked.stats().barriers};
}

}  // namespace

int main(int argc, char** argv) {
    try {
        Options options = parse(argc, argv);
        gpu::Instance instance;
        gpu::Device device(instance);
        gpu::Buffer step = device.allocator().create(16, gpu::MemoryDomain::DeviceMapped);
        gpu::Buffer input = device.allocator().create(1024, gpu::MemoryDomain::Device);
        gpu::Buffer output = device.allocator().create(1024, gpu::MemoryDomain::Device);
        gpu::Transfer transfer(device);
        std::vector<float> ones(256, 1.0f);
        transfer.upload(input, std::span<const float>(ones));
        transfer.flush();

        std::printf("device: %s\n", device.caps().name.c_str());
        std::printf("| graph | passes | barriers | record (ms, once) | host submit (us/replay) | wall (us/replay) | wall per pass (us) |\n");
        std::printf("|---|---:|---:|---:|---:|---:|---:|\n");
        for (bool omit : {false, true}) {
            Result r = measure(device, options, omit, step, input, output);
            std::printf("| %s | %d | %zu | %.3f | %.1f | %.0f | %.1f |\n", omit ? "barriers omitted" : "baked",
                        options.passes, r.barriers, r.record_ms, r.submit_us, r.replay_us, r.replay_us / options.passes);
        }
        return 0;
    } catch (const std::exception& error) {
        std::fprintf(stderr, "bench_graph: %s\n", error.what());
        return 1;
    }
}
