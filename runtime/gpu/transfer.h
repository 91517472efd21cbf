#pragma once
// Host <-> device copies. Uploads go through a bounded staging ring (copies are batched and submitted
// when the ring fills or on flush; the rings are made on first use, so a device whose buffers the
// host maps never holds them), except into buffers the host can map, which are written directly
// unless VKLLM_FORCE_STAGING=1 (tests use it to exercise the ring on devices without discrete memory).
// On null hardware uploads are dropped: nothing can run there (`vkllm shaders` only creates pipelines).
#include <span>

#include "gpu/memory.h"

namespace vkllm::gpu {

class Device;

class Transfer {
public:
    explicit Transfer(Device& device, VkDeviceSize ring_bytes = 64ull << 20);
    ~Transfer();
    Transfer(const Transfer&) = delete;
    Transfer& operator=(const Transfer&) = delete;

    // The data is on the device after flush() (or the next readback).
    void upload(const Buffer& destination, VkDeviceSize offset, std::span<const std::byte> bytes);
    void readback(const Buffer& source, VkDeviceSize offset, std::span<std::byte> bytes);
    void flush();

    template <class T>
    void upload(const Buffer& destination, std::span<const T> values, VkDeviceSize offset = 0) {
        upload(destination, offset, std::as_bytes(values));
    }
    template <class T>
    void readback(const Buffer& source, std::span<T> values, VkDeviceSize offset = 0) {
        readback(source, offset, std::as_writable_bytes(values));
    }

    size_t submits() const { return submits_; }

private:
    Device& device_;
    Buffer ring_, readback_ring_;
    VkDeviceSize ring_bytes_, head_ = 0;
    VkCommandBuffer command_buffer_ = VK_NULL_HANDLE;
    bool recording_ = false, staging_always_;
    size_t submits_ = 0;

    VkCommandBuffer begin();
    const Buffer& ring(Buffer& ring, MemoryDomain domain);  // `ring`, made on first use
};

}  // namespace vkllm::gpu
