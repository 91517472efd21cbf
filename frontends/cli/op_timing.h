#pragma once
// Timing an op as production runs it, for the commands that measure kernels (bench-ops, tune).
#include <algorithm>
#include <cstdint>
#include <vector>

#include <fmt/format.h>

#include "gpu/device.h"
#include "graph/baked.h"
#include "graph/graph.h"

namespace vkllm::cli {

struct Timing {
    uint32_t repeat;
    bool fastest;
};

// The median of the runs' milliseconds, or with --fastest the least.
inline double pick(std::vector<double> ms, Timing timing) {
    if (timing.fastest) return *std::ranges::min_element(ms);
    std::nth_element(ms.begin(), ms.begin() + ms.size() / 2, ms.end());
    return ms[ms.size() / 2];
}

// Median (or with Timing::fastest, least) milliseconds of `repeat` runs of an op, its passes run as
// production runs them: `describe` declares the op's buffers in a graph and returns its dispatches,
// which are baked once; the timed runs are profiled pass by pass, back to back, and each run's passes'
// times summed.
inline double op_ms(gpu::Device& device, Timing timing, const auto& describe) {
    graph::Graph g(device);
    const std::vector<graph::Dispatch> dispatches = describe(g);
    for (size_t i = 0; i < dispatches.size(); ++i) g.add(fmt::format("pass{}", i), dispatches[i]);
    graph::BakedGraph baked = std::move(g).bake();
    baked.replay();
    const std::vector<graph::PassTime> passes = baked.profile(timing.repeat);
    std::vector<double> ms(timing.repeat, 0.0);
    for (size_t i = 0; i < passes.size(); ++i) ms[i / dispatches.size()] += passes[i].milliseconds;
    return pick(std::move(ms), timing);
}

}  // namespace vkllm::cli
