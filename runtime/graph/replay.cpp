// Recording once, replaying many times, and profiling a run pass by pass.
#include <chrono>

#include "gpu/check.h"
#include "gpu/device.h"
#include "gpu/timing.h"
#include "graph/state.h"

namespace vkllm::graph {
namespace {

using Clock = std::chrono::steady_clock;

double milliseconds_since(Clock::time_point start) {
    return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// Between runs: the previous run's writes and the host's uploads before the first pass, this run's
// writes before the host reads them and before the next run.
void record_run_boundary(VkCommandBuffer command_buffer) {
    VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                            VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_INDIRECT_COMMAND_READ_BIT | VK_ACCESS_HOST_READ_BIT;
    vkCmdPipelineBarrier(command_buffer, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                         VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT |
                             VK_PIPELINE_STAGE_DRAW_INDIRECT_BIT | VK_PIPELINE_STAGE_HOST_BIT,
                         0, 1, &barrier, 0, nullptr, 0, nullptr);
}

VkCommandBuffer begin(gpu::Device& device, VkCommandBufferUsageFlags flags) {
    VkCommandBuffer command_buffer = device.allocate_command_buffer();
    VkCommandBufferBeginInfo info{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    info.flags = flags;
    VKLLM_VK_CHECK(vkBeginCommandBuffer(command_buffer, &info));
    return command_buffer;
}

void submit_and_wait(gpu::Device& device, VkCommandBuffer command_buffer, VkFence fence, GraphStats* stats) {
    VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    submit.commandBufferCount = 1;
    submit.pCommandBuffers = &command_buffer;
    auto started = Clock::now();
    VKLLM_VK_CHECK(vkQueueSubmit(device.queue(), 1, &submit, fence));
    if (stats) stats->submit_ms += milliseconds_since(started);
    started = Clock::now();
    VKLLM_VK_CHECK(vkWaitForFences(device.handle(), 1, &fence, VK_TRUE, UINT64_MAX));
    if (stats) stats->wait_ms += milliseconds_since(started);
    VKLLM_VK_CHECK(vkResetFences(device.handle(), 1, &fence));
}

}  // namespace

State::~State() {
    if (!device) return;
    if (command_buffer) device->free_command_buffer(command_buffer);
    if (fence) vkDestroyFence(device->handle(), fence, nullptr);
}

BakedGraph::~BakedGraph() = default;

void BakedGraph::record_passes(VkCommandBuffer command_buffer, gpu::Timestamps* timestamps) {
    State& s = *state_;
    record_run_boundary(command_buffer);
    for (size_t level = 0; level < s.levels.size(); ++level) {
        if (level > 0 && !s.options.omit_barriers) gpu::record_full_barrier(command_buffer);
        for (size_t p : s.levels[level]) {
            if (timestamps) timestamps->begin(command_buffer, s.passes[p]->name_);
            gpu::record_dispatch(command_buffer, s.passes[p]->bound_, s.sets[p]);
            if (timestamps) timestamps->end(command_buffer);
        }
    }
    record_run_boundary(command_buffer);
}

void BakedGraph::record() {
    State& s = *state_;
    auto started = Clock::now();
    VkFenceCreateInfo fence_info{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VKLLM_VK_CHECK(vkCreateFence(s.device->handle(), &fence_info, nullptr, &s.fence));
    s.command_buffer = begin(*s.device, 0);
    record_passes(s.command_buffer, nullptr);
    VKLLM_VK_CHECK(vkEndCommandBuffer(s.command_buffer));
    stats_.record_ms = milliseconds_since(started);
    ++stats_.recordings;
}

void BakedGraph::replay() {
    State& s = *state_;
    submit_and_wait(*s.device, s.command_buffer, s.fence, &stats_);
    ++stats_.replays;
}

std::vector<PassTime> BakedGraph::profile(uint32_t runs) {
    State& s = *state_;
    gpu::Timestamps timestamps(*s.device, uint32_t(s.passes.size()) * runs);
    VkCommandBuffer command_buffer = begin(*s.device, VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT);
    timestamps.reset(command_buffer);
    for (uint32_t run = 0; run < runs; ++run) record_passes(command_buffer, &timestamps);
    VKLLM_VK_CHECK(vkEndCommandBuffer(command_buffer));
    submit_and_wait(*s.device, command_buffer, s.fence, nullptr);
    s.device->free_command_buffer(command_buffer);
    std::vector<PassTime> times;
    for (const auto& region : timestamps.read()) times.push_back({region.label, region.milliseconds});
    return times;
}

}  // namespace vkllm::graph
