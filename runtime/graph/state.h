#pragma once
// BakedGraph's internals, shared by bake.cpp, replay.cpp and dump.cpp.
#include <memory>
#include <vector>

#include "gpu/dispatch.h"
#include "graph/baked.h"

namespace vkllm::graph {

struct BakedGraph::State {
    gpu::Device* device = nullptr;
    BakeOptions options;
    std::vector<Resource> resources;
    std::vector<std::unique_ptr<Pass>> passes;
    std::vector<int> level_of;                // per pass
    std::vector<std::vector<size_t>> levels;  // pass indices, in declaration order within a level
    std::vector<Placement> placements;        // per resource; used for transients
    std::vector<std::shared_ptr<gpu::Buffer>> arenas;
    std::vector<gpu::Buffer> owned;  // Graph::zeroed memory
    std::unique_ptr<gpu::DescriptorArena> descriptors;
    std::vector<VkDescriptorSet> sets;  // per pass
    VkCommandBuffer command_buffer = VK_NULL_HANDLE;
    VkFence fence = VK_NULL_HANDLE;

    ~State();
    // Fails unless the region is a non-empty range within its resource.
    void check_bounds(const Region& region, const std::string& pass) const;
};

using State = BakedGraph::State;

}  // namespace vkllm::graph
