#include "gpu/timing.h"

#include "gpu/check.h"
#include "gpu/device.h"

namespace vkllm::gpu {

Timestamps::Timestamps(Device& device, uint32_t max_regions) : device_(device), capacity_(max_regions) {
    if (!device.caps().compute_timestamps || device.caps().timestamp_valid_bits == 0)
        fail("device '{}' has no timestamps on its compute queue", device.caps().name);
    VkQueryPoolCreateInfo info{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    info.queryType = VK_QUERY_TYPE_TIMESTAMP;
    info.queryCount = 2 * max_regions;
    VKLLM_VK_CHECK(vkCreateQueryPool(device.handle(), &info, nullptr, &pool_));
}

Timestamps::~Timestamps() { vkDestroyQueryPool(device_.handle(), pool_, nullptr); }

void Timestamps::reset(VkCommandBuffer command_buffer) {
    vkCmdResetQueryPool(command_buffer, pool_, 0, 2 * capacity_);
    labels_.clear();
    open_ = false;
}

void Timestamps::begin(VkCommandBuffer command_buffer, std::string label) {
    if (open_ || labels_.size() == capacity_) fail("timestamp region '{}' overflows or nests", label);
    vkCmdWriteTimestamp(command_buffer, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, pool_, uint32_t(2 * labels_.size()));
    labels_.push_back(std::move(label));
    open_ = true;
}

void Timestamps::end(VkCommandBuffer command_buffer) {
    if (!open_) fail("timestamp end() without begin()");
    vkCmdWriteTimestamp(command_buffer, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, pool_, uint32_t(2 * labels_.size() - 1));
    open_ = false;
}

std::vector<Timestamps::Region> Timestamps::read() const {
    std::vector<Timestamps::Region> regions;
    if (labels_.empty()) return regions;
    std::vector<uint64_t> ticks(2 * labels_.size());
    VKLLM_VK_CHECK(vkGetQueryPoolResults(device_.handle(), pool_, 0, uint32_t(ticks.size()), ticks.size() * 8,
                                         ticks.data(), 8, VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT));
    const Capabilities& caps = device_.caps();
    uint64_t mask = caps.timestamp_valid_bits >= 64 ? ~0ull : (1ull << caps.timestamp_valid_bits) - 1;
    for (size_t i = 0; i < labels_.size(); ++i) {
        uint64_t elapsed = (ticks[2 * i + 1] - ticks[2 * i]) & mask;
        regions.push_back({labels_[i], double(elapsed) * caps.timestamp_period_ns * 1e-6});
    }
    return regions;
}

}  // namespace vkllm::gpu
