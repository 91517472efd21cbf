#include "graph/graph.h"

#include <utility>

#include <fmt/format.h>

#include "core/error.h"
#include "gpu/check.h"
#include "gpu/device.h"

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

Graph::~Graph() { destroy_identities(*device_, resources_); }

void destroy_identities(gpu::Device& device, std::vector<Resource>& resources) {
    for (Resource& resource : resources)
        if (resource.identity) vkDestroyBuffer(device.handle(), std::exchange(resource.identity, VK_NULL_HANDLE), nullptr);
}

Region Graph::persistent(std::string name, const gpu::BufferRange& range) {
    if (range.size == 0) fail("persistent resource '{}' is empty", name);
    resources_.push_back({std::move(name), range.size, range});
    return {uint32_t(resources_.size() - 1), 0, range.size};
}

Region Graph::transient(std::string name, VkDeviceSize bytes) {
    if (bytes == 0) fail("transient resource '{}' is empty", name);
    VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    info.size = bytes;
    info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
    VkBuffer identity;
    VKLLM_VK_CHECK(vkCreateBuffer(device_->handle(), &info, nullptr, &identity));
    resources_.push_back({std::move(name), bytes, std::nullopt, identity});
    return {uint32_t(resources_.size() - 1), 0, bytes};
}

Region Graph::zeroed(std::string name, VkDeviceSize bytes) {
    if (bytes == 0) fail("zeroed resource '{}' is empty", name);
    const gpu::Buffer& buffer = owned_.emplace_back(device_->allocator().create(bytes, gpu::MemoryDomain::DeviceMapped));
    buffer.write(0, std::vector<std::byte>(bytes));
    return persistent(std::move(name), buffer.range());
}

gpu::BufferRange Graph::range(Region region) const {
    if (region.resource >= resources_.size()) fail("range() of a region that names no resource");
    const Resource& resource = resources_[region.resource];
    VkDeviceSize size = region.size == VK_WHOLE_SIZE ? resource.size - region.offset : region.size;
    if (resource.persistent) return resource.persistent->sub(region.offset, size);
    return gpu::BufferRange{resource.identity, 0, resource.size}.sub(region.offset, size);
}

Region Graph::region_of(const gpu::BufferRange& range, const std::string& pass, size_t binding) {
    for (uint32_t r = 0; r < resources_.size(); ++r) {
        const Resource& resource = resources_[r];
        if (resource.identity == range.buffer) return {r, range.offset, range.size};
        const auto& memory = resource.persistent;
        if (memory && memory->buffer == range.buffer && range.offset >= memory->offset &&
            range.offset + range.size <= memory->offset + memory->size)
            return {r, range.offset - memory->offset, range.size};
    }
    return persistent(fmt::format("{}#{}", pass, binding), range);
}

Pass& Graph::add(std::string name, const gpu::Dispatch& dispatch, uint64_t weight_bytes) {
    if (!dispatch.pipeline) fail("pass '{}' has no pipeline", name);
    std::vector<Region> regions;
    for (size_t b = 0; b < dispatch.bindings.size(); ++b) regions.push_back(region_of(dispatch.bindings[b].range, name, b));
    std::optional<Region> arguments;
    if (dispatch.indirect) arguments = region_of(*dispatch.indirect, name, dispatch.bindings.size());
    Pass& pass = add_pass(std::move(name), *dispatch.pipeline);
    for (size_t b = 0; b < regions.size(); ++b) pass.bind(regions[b], dispatch.bindings[b].access);
    if (arguments) pass.indirect(*arguments);
    pass.dispatch_.push = dispatch.push;
    pass.dispatch_.groups = dispatch.groups;
    return pass.bytes(weight_bytes);
}

Pass& Graph::add_pass(std::string name, const gpu::Pipeline& pipeline) {
    passes_.push_back(std::unique_ptr<Pass>(new Pass(std::move(name), pipeline)));
    return *passes_.back();
}

}  // namespace vkllm::graph
