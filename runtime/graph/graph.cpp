#include "graph/graph.h"

#include "core/error.h"

namespace vkllm::graph {

Region Region::sub(VkDeviceSize sub_offset, VkDeviceSize sub_size) const {
    if (size != VK_WHOLE_SIZE && sub_offset + sub_size > size)
        fail("sub-region [{}, +{}) lies outside a {}-byte region", sub_offset, sub_size, size);
    return {resource, offset + sub_offset, sub_size};
}

Pass::Pass(std::string name, const gpu::Pipeline& pipeline) : name_(std::move(name)) {
    dispatch_.pipeline = &pipeline;
}

Pass& Pass::bind(Region region, gpu::Access access) {
    accesses_.push_back({region, access});
    return *this;
}

Pass& Pass::indirect(Region arguments) {
    indirect_ = arguments;
    return *this;
}

Pass& Pass::groups(uint32_t x, uint32_t y, uint32_t z) {
    dispatch_.groups = {x, y, z};
    return *this;
}

Pass& Pass::threads(uint64_t count, uint32_t y, uint32_t z) {
    return groups(dispatch_.pipeline->groups_x(count), y, z);
}

Pass& Pass::bytes(uint64_t count) {
    bytes_ = count;
    return *this;
}

Graph::Graph(gpu::Device& device) : device_(&device) {}

Region Graph::persistent(std::string name, const gpu::BufferRange& range) {
    if (range.size == 0) fail("persistent resource '{}' is empty", name);
    resources_.push_back({std::move(name), range.size, range});
    return {uint32_t(resources_.size() - 1), 0, range.size};
}

Region Graph::transient(std::string name, VkDeviceSize bytes) {
    if (bytes == 0) fail("transient resource '{}' is empty", name);
    resources_.push_back({std::move(name), bytes, std::nullopt});
    return {uint32_t(resources_.size() - 1), 0, bytes};
}

Pass& Graph::add_pass(std::string name, const gpu::Pipeline& pipeline) {
    passes_.push_back(std::unique_ptr<Pass>(new Pass(std::move(name), pipeline)));
    return *passes_.back();
}

}  // namespace vkllm::graph
