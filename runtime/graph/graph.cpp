#include "graph/graph.h"

#include <atomic>
#include <utility>

#include "core/error.h"
#include "gpu/device.h"

namespace vkllm::graph {
namespace {

std::atomic<uint32_t> next_graph_id{1};

void check_declared(const Region& region, uint32_t graph, const std::string& pass) {
    if (region.graph != graph)
        fail("pass '{}' binds a buffer that no persistent(), transient() or zeroed() of its graph declared", pass);
}

}  // namespace

Region Region::sub(VkDeviceSize sub_offset, VkDeviceSize sub_size) const {
    if (sub_offset + sub_size > size)
        fail("sub-region [{}, +{}) lies outside a {}-byte region", sub_offset, sub_size, size);
    return {graph, resource, offset + sub_offset, sub_size};
}

bool Region::overlaps(const Region& other) const {
    return graph == other.graph && resource == other.resource && offset < other.offset + other.size &&
           other.offset < offset + size;
}

Pass::Pass(std::string name, uint32_t graph, Dispatch declared)
    : name_(std::move(name)), graph_(graph), declared_(std::move(declared)) {
    for (const Access& binding : declared_.bindings) check_declared(binding.region, graph_, name_);
    if (declared_.indirect) check_declared(*declared_.indirect, graph_, name_);
}

Pass& Pass::bind(Region region, gpu::Access access) {
    check_declared(region, graph_, name_);
    declared_.bindings.push_back({region, access});
    return *this;
}

Pass& Pass::indirect(Region arguments) {
    check_declared(arguments, graph_, name_);
    declared_.indirect = arguments;
    return *this;
}

Pass& Pass::groups(uint32_t x, uint32_t y, uint32_t z) {
    declared_.groups = {x, y, z};
    return *this;
}

Pass& Pass::threads(uint64_t count, uint32_t y, uint32_t z) {
    return groups(declared_.pipeline->groups_x(count), y, z);
}

Pass& Pass::bytes(uint64_t count) {
    bytes_ = count;
    return *this;
}

Graph::Graph(gpu::Device& device) : device_(&device), id_(next_graph_id++) {}

Graph::~Graph() = default;

Region Graph::persistent(std::string name, const gpu::BufferRange& range) {
    if (range.size == 0) fail("persistent resource '{}' is empty", name);
    if (auto known = persistent_by_name_.find(name); known != persistent_by_name_.end()) {
        const gpu::BufferRange& memory = *resources_[known->second].persistent;
        if (memory.buffer != range.buffer || memory.offset != range.offset || memory.size != range.size)
            fail("persistent resource '{}' is declared twice over different memory", name);
        return {id_, known->second, 0, range.size};
    }
    persistent_by_name_.emplace(name, uint32_t(resources_.size()));
    resources_.push_back({std::move(name), range.size, range});
    return {id_, uint32_t(resources_.size() - 1), 0, range.size};
}

Region Graph::transient(std::string name, VkDeviceSize bytes) {
    if (bytes == 0) fail("transient resource '{}' is empty", name);
    resources_.push_back({std::move(name), bytes, std::nullopt});
    return {id_, uint32_t(resources_.size() - 1), 0, bytes};
}

Region Graph::zeroed(std::string name, VkDeviceSize bytes) {
    if (bytes == 0) fail("zeroed resource '{}' is empty", name);
    const gpu::Buffer& buffer = owned_.emplace_back(device_->allocator().create(bytes, gpu::MemoryDomain::DeviceMapped));
    buffer.write(0, std::vector<std::byte>(bytes));
    return persistent(std::move(name), buffer.range());
}

bool Graph::aligned(Region region) const {
    if (region.graph != id_) fail("aligned() of a region that is not this graph's");
    const auto& memory = resources_.at(region.resource).persistent;
    return ((memory ? memory->offset : 0) + region.offset) % device_->caps().min_storage_buffer_offset_alignment == 0;
}

Pass& Graph::add(std::string name, Dispatch dispatch, uint64_t weight_bytes) {
    if (!dispatch.pipeline) fail("pass '{}' has no pipeline", name);
    passes_.push_back(std::unique_ptr<Pass>(new Pass(std::move(name), id_, std::move(dispatch))));
    return passes_.back()->bytes(weight_bytes);
}

Pass& Graph::add_pass(std::string name, const gpu::Pipeline& pipeline) {
    return add(std::move(name), Dispatch{.pipeline = &pipeline});
}

}  // namespace vkllm::graph
