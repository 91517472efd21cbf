#include "gpu/transfer.h"

#include <algorithm>
#include <cstring>

#include "gpu/check.h"
#include "gpu/device.h"
#include "gpu/dispatch.h"

namespace vkllm::gpu {

Transfer::Transfer(Device& device, VkDeviceSize ring_bytes)
    : device_(device), ring_bytes_(std::min(ring_bytes, device.allocator().max_binding_range())),
      staging_always_(device.caps().force_staging) {}

const Buffer& Transfer::ring(Buffer& ring, MemoryDomain domain) {
    if (ring.empty()) ring = device_.allocator().create(ring_bytes_, domain);
    return ring;
}

Transfer::~Transfer() {
    if (command_buffer_) {
        if (recording_) vkEndCommandBuffer(command_buffer_);
        device_.free_command_buffer(command_buffer_);
    }
}

VkCommandBuffer Transfer::begin() {
    if (!command_buffer_) command_buffer_ = device_.allocate_command_buffer();
    if (!recording_) {
        VkCommandBufferBeginInfo info{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
        info.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
        VKLLM_VK_CHECK(vkBeginCommandBuffer(command_buffer_, &info));
        record_full_barrier(command_buffer_);  // earlier submissions may still read what we overwrite
        recording_ = true;
    }
    return command_buffer_;
}

void Transfer::flush() {
    if (!recording_) return;
    record_full_barrier(command_buffer_);  // later submissions read what was copied
    VKLLM_VK_CHECK(vkEndCommandBuffer(command_buffer_));
    recording_ = false;
    device_.submit_and_wait(command_buffer_);
    ++submits_;
    head_ = 0;
}

void Transfer::upload(const Buffer& destination, VkDeviceSize offset, std::span<const std::byte> bytes) {
    if (device_.caps().null_hardware) return;  // nothing runs there: weights need their place, not their values
    if (destination.host_visible() && !staging_always_) {
        flush();  // keep the order of earlier staged copies to the same bytes
        destination.write(offset, bytes);
        return;
    }
    destination.for_each_segment(offset, bytes.size(),
                                 [&](const BufferRange& segment, VkDeviceSize within, VkDeviceSize from, VkDeviceSize count) {
        const BufferRange& ring_range = ring(ring_, MemoryDomain::Upload).range();
        while (count > 0) {
            if (head_ == ring_range.size) flush();
            VkDeviceSize chunk = std::min(count, ring_range.size - head_);
            std::memcpy(ring_range.mapped + head_, bytes.data() + from, chunk);
            VkBufferCopy region{ring_range.offset + head_, segment.offset + within, chunk};
            vkCmdCopyBuffer(begin(), ring_range.buffer, segment.buffer, 1, &region);
            head_ += chunk;
            within += chunk;
            from += chunk;
            count -= chunk;
        }
    });
}

void Transfer::readback(const Buffer& source, VkDeviceSize offset, std::span<std::byte> bytes) {
    if (device_.caps().null_hardware) fail("Vulkan device '{}' is null hardware: nothing can be read back", device_.caps().name);
    flush();
    if (source.host_visible() && !staging_always_) {
        source.read(offset, bytes);
        return;
    }
    const BufferRange& ring = this->ring(readback_ring_, MemoryDomain::Readback).range();
    source.for_each_segment(offset, bytes.size(),
                                 [&](const BufferRange& segment, VkDeviceSize within, VkDeviceSize from, VkDeviceSize count) {
        while (count > 0) {
            VkDeviceSize chunk = std::min(count, ring.size);
            VkBufferCopy region{segment.offset + within, ring.offset, chunk};
            VkCommandBuffer command_buffer = begin();
            vkCmdCopyBuffer(command_buffer, segment.buffer, ring.buffer, 1, &region);
            VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
            barrier.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
            barrier.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
            vkCmdPipelineBarrier(command_buffer, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1,
                                 &barrier, 0, nullptr, 0, nullptr);
            flush();
            std::memcpy(bytes.data() + from, ring.mapped, chunk);
            within += chunk;
            from += chunk;
            count -= chunk;
        }
    });
}

}  // namespace vkllm::gpu
