#pragma once
// The render graph: compute passes declare the buffer regions they read and write; bake() orders
// them, places the fewest barriers that keep them correct, gives transient buffers memory by lifetime
// (aliasing those that never live at once), writes descriptor sets once and records one command
// buffer that every replay submits again. Per-step values (position, cache slot...) live in buffers
// the host writes between replays, so decode never re-records.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gpu/dispatch.h"

namespace vkllm::graph {

class BakedGraph;

// A byte range of a resource. The default size means "to the end of the resource".
struct Region {
    uint32_t resource = UINT32_MAX;
    VkDeviceSize offset = 0;
    VkDeviceSize size = VK_WHOLE_SIZE;

    Region sub(VkDeviceSize sub_offset, VkDeviceSize sub_size) const;
};

struct Access {
    Region region;
    gpu::Access access;
};

struct Resource {
    std::string name;
    VkDeviceSize size;
    std::optional<gpu::BufferRange> persistent;  // absent: a transient the graph places
    VkBuffer identity = VK_NULL_HANDLE;          // a transient's stand-in handle (see Graph::range)
};

class Graph;

// Frees the stand-in handles of transients (graph.cpp).
void destroy_identities(gpu::Device& device, std::vector<Resource>& resources);

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
        dispatch_.params(values);
        return *this;
    }

    const std::string& name() const { return name_; }

private:
    friend class Graph;
    friend class BakedGraph;
    Pass(std::string name, const gpu::Pipeline& pipeline);
    Pass& bind(Region region, gpu::Access access);

    std::string name_;
    gpu::Dispatch dispatch_;  // bindings are filled in at bake, once memory is placed
    std::vector<Access> accesses_;
    std::optional<Region> indirect_;
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

    // Memory that outlives the graph (weights, KV cache, logits, the step-parameter buffer).
    Region persistent(std::string name, const gpu::BufferRange& range);
    // Memory the graph owns for the length of one run; its contents do not survive between runs.
    Region transient(std::string name, VkDeviceSize bytes);
    // Memory the graph owns for its whole life, zero at first, that every run must leave zero again
    // (counters a kernel resets itself); passes see it as persistent memory.
    Region zeroed(std::string name, VkDeviceSize bytes);
    // The returned reference stays valid until bake().
    Pass& add_pass(std::string name, const gpu::Pipeline& pipeline);

    // Ops build gpu::Dispatches over BufferRanges. range() gives a region as one: a persistent
    // region's real memory, or for a transient a range of a stand-in VkBuffer that has no memory yet
    // (it identifies the transient; bake() binds the memory placed for it). add() turns such a
    // dispatch back into a pass: each binding becomes the region it names (a persistent range
    // nobody registered becomes a resource of its own, named after the pass).
    gpu::BufferRange range(Region region) const;
    Pass& add(std::string name, const gpu::Dispatch& dispatch, uint64_t weight_bytes = 0);

    BakedGraph bake(BakeOptions options = {}) &&;

private:
    gpu::Device* device_;
    std::vector<Resource> resources_;
    std::vector<gpu::Buffer> owned_;  // zeroed() memory

    Region region_of(const gpu::BufferRange& range, const std::string& pass, size_t binding);
    std::vector<std::unique_ptr<Pass>> passes_;
};

}  // namespace vkllm::graph
