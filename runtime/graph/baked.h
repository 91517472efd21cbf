#pragma once
// A baked graph: passes in dependency levels, barriers between levels, transients placed in aliased
// arenas, descriptor sets written, and one recorded command buffer replayed on every run.
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "gpu/dispatch.h"
#include "graph/graph.h"

namespace vkllm::gpu {
class Timestamps;
}

namespace vkllm::graph {

struct GraphStats {
    size_t passes = 0;
    size_t dispatches = 0;
    size_t barriers = 0;  // between passes; each submit also has one on entry and one on exit
    uint64_t transient_bytes = 0;          // all transients side by side
    uint64_t transient_bytes_aliased = 0;  // what was allocated once lifetimes share memory
    uint64_t weight_bytes = 0;             // declared with Pass::bytes
    double bake_ms = 0, record_ms = 0;
    uint64_t recordings = 0, replays = 0;
    double submit_ms = 0;  // host time spent in vkQueueSubmit, all replays together
    double wait_ms = 0;    // host time spent waiting for the GPU to finish, all replays together
};

struct PassTime {
    std::string name;
    double milliseconds;
};

class BakedGraph {
public:
    BakedGraph(BakedGraph&&) noexcept;
    BakedGraph& operator=(BakedGraph&&) = delete;
    ~BakedGraph();

    // Submits the recorded command buffer and waits for it; outputs are then visible to the host.
    void replay();
    // Runs `runs` times back to back in one submission with a timestamp around every pass: the times
    // of each run's passes in turn.
    std::vector<PassTime> profile(uint32_t runs = 1);

    const GraphStats& stats() const { return stats_; }
    // The memory a region was given (transients: only meaningful within a run).
    gpu::BufferRange physical(Region region) const;
    // Passes by level, resources, placements and barriers, as text (--dump-graph).
    void dump(std::ostream& out) const;

    struct State;  // defined in graph/state.h, for the graph's own sources

private:
    friend class Graph;
    struct Placement {
        size_t arena = 0;
        VkDeviceSize offset = 0;
        int first_level = -1, last_level = -1;
    };
    std::unique_ptr<State> state_;
    GraphStats stats_;

    explicit BakedGraph(std::unique_ptr<State> state);
    void order_passes();
    void place_transients();
    void bind_passes();
    void record();
    void record_passes(VkCommandBuffer command_buffer, gpu::Timestamps* timestamps);
};

}  // namespace vkllm::graph
