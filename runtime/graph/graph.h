#pragma once
// The render graph: compute passes declare the regions of its resources they read and write; bake() orders
// them, places the fewest barriers that keep them correct, gives transient buffers memory by lifetime
// (aliasing those that never live at once), writes descriptor sets once and records one command
// buffer that every replay submits again. Per-step values (position, cache slot...) live in buffers
// the host writes between replays, so decode never re-records.
#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gpu/dispatch.h"

namespace vkllm::graph {

class BakedGraph;

// A byte range of a resource that Graph::persistent, transient or zeroed of one graph declared (or a
// sub-range of one). The default region is empty and names nothing: a pass cannot bind it.
struct Region {
    uint32_t graph = 0;  // the declaring graph's id; 0: none
    uint32_t resource = UINT32_MAX;
    VkDeviceSize offset = 0;
    VkDeviceSize size = 0;

    Region sub(VkDeviceSize sub_offset, VkDeviceSize sub_size) const;
    // Whether both lie in the same resource and share a byte.
    bool overlaps(const Region& other) const;
};

struct Access {
    Region region;
    gpu::Access access;
};

// A compute dispatch over graph regions, as ops describe one: the pipeline, the regions it binds
// (binding i is bindings[i]) and how it touches each, push constants and group counts, or indirect
// arguments an earlier pass wrote. Graph::add makes it a pass; bake binds the memory behind them.
struct Dispatch {
    const gpu::Pipeline* pipeline = nullptr;
    std::vector<Access> bindings;
    std::vector<std::byte> push;
    std::array<uint32_t, 3> groups{1, 1, 1};
    std::optional<Region> indirect;  // a VkDispatchIndirectCommand written on the GPU

    template <class Params>
    Dispatch& params(const Params& values) {
        push = gpu::push_bytes(values);
        return *this;
    }
};

struct Resource {
    std::string name;
    VkDeviceSize size;
    std::optional<gpu::BufferRange> persistent;  // absent: a transient the graph places
};

class Pass {
public:
    // Bindings follow the order of these calls: binding 0 is the first region declared.
    Pass& read(Region region) { return bind(region, gpu::Access::Read); }
    Pass& write(Region region) { return bind(region, gpu::Access::Write); }
    Pass& read_write(Region region) { return bind(region, gpu::Access::ReadWrite); }
    // Takes its group counts from a VkDispatchIndirectCommand an earlier pass wrote.
    Pass& indirect(Region arguments);
    Pass& groups(uint32_t x, uint32_t y = 1, uint32_t z = 1);
    // Groups along x to cover `count` invocations with the pipeline's workgroup size.
    Pass& threads(uint64_t count, uint32_t y = 1, uint32_t z = 1);
    // Bytes of weights the pass streams, for bytes-per-token and GB/s.
    Pass& bytes(uint64_t count);
    template <class Params>
    Pass& params(const Params& values) {
        declared_.params(values);
        return *this;
    }

    const std::string& name() const { return name_; }

private:
    friend class Graph;
    friend class BakedGraph;
    Pass(std::string name, uint32_t graph, Dispatch declared);
    Pass& bind(Region region, gpu::Access access);

    std::string name_;
    uint32_t graph_;     // the id of the graph it belongs to, whose regions alone it may bind
    Dispatch declared_;  // over regions
    gpu::Dispatch bound_;  // the same over the memory bake() placed
    uint64_t bytes_ = 0;
};

// Transient memory shared by graphs that never run at the same time (a session's graphs: every
// replay waits for the GPU). Arena i is the largest any of them asked for so far; a graph baked
// before it grew keeps the smaller arena it was given alive.
struct SharedArenas {
    std::vector<std::shared_ptr<gpu::Buffer>> arenas;
};

struct BakeOptions {
    SharedArenas* shared_arenas = nullptr;  // none: the graph allocates transient memory of its own
    // Records no barriers at all. Wrong by design: it shows that synchronization validation catches
    // a missing dependency, and lets a benchmark price the barriers.
    bool omit_barriers = false;
};

class Graph {
public:
    explicit Graph(gpu::Device& device);
    ~Graph();
    Graph(const Graph&) = delete;
    Graph& operator=(const Graph&) = delete;

    // Memory that outlives the graph (weights, KV cache, logits, the step-parameter buffer). The same
    // name over the same memory again gives the same region (a weight two passes read is one resource).
    Region persistent(std::string name, const gpu::BufferRange& range);
    // Memory the graph owns for the length of one run; its contents do not survive between runs.
    Region transient(std::string name, VkDeviceSize bytes);
    // Memory the graph owns for its whole life, zero at first, that every run must leave zero again
    // (counters a kernel resets itself); passes see it as persistent memory.
    Region zeroed(std::string name, VkDeviceSize bytes);

    // A pass of the dispatch an op described; every region it binds must be this graph's.
    Pass& add(std::string name, Dispatch dispatch, uint64_t weight_bytes = 0);
    // A pass declared binding by binding; the returned reference stays valid until bake().
    Pass& add_pass(std::string name, const gpu::Pipeline& pipeline);
    // Whether a pass can bind the region: its offset in memory meets the device's storage-buffer
    // alignment (a transient's memory starts aligned, a persistent's where its range does).
    bool aligned(Region region) const;

    BakedGraph bake(BakeOptions options = {}) &&;

private:
    gpu::Device* device_;
    uint32_t id_;  // in every region this graph declares
    std::vector<Resource> resources_;
    std::map<std::string, uint32_t> persistent_by_name_;
    std::vector<gpu::Buffer> owned_;  // zeroed() memory
    std::vector<std::unique_ptr<Pass>> passes_;
};

}  // namespace vkllm::graph
