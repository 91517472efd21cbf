#pragma once
// A compute dispatch described as data: pipeline, the buffer ranges it binds (and whether it reads or
// writes each), push constants and group counts (or an indirect buffer the GPU filled). The render
// graph binds its passes' memory into Dispatches when it bakes; `Commands` records them directly for
// one-off work.
#include <volk.h>

#include <array>
#include <cstring>
#include <optional>
#include <type_traits>
#include <vector>

#include "gpu/memory.h"
#include "gpu/pipeline.h"

namespace vkllm::gpu {

class Device;

enum class Access : uint8_t { Read, Write, ReadWrite };

// The bytes of a push-constant struct.
template <class Params>
std::vector<std::byte> push_bytes(const Params& params) {
    static_assert(std::is_trivially_copyable_v<Params>);
    std::vector<std::byte> bytes(sizeof params);
    std::memcpy(bytes.data(), &params, sizeof params);
    return bytes;
}

struct Binding {
    BufferRange range;
    Access access = Access::Read;
};

struct Dispatch {
    const Pipeline* pipeline = nullptr;
    std::vector<Binding> bindings;  // binding i of set 0
    std::vector<std::byte> push;    // push-constant bytes
    std::array<uint32_t, 3> groups{1, 1, 1};
    std::optional<BufferRange> indirect;  // a VkDispatchIndirectCommand written on the GPU

    template <class Params>
    Dispatch& params(const Params& params) {
        push = push_bytes(params);
        return *this;
    }
};

// Descriptor sets for dispatches, written once and kept until reset (a baked graph keeps its own).
class DescriptorArena {
public:
    explicit DescriptorArena(Device& device);
    ~DescriptorArena();
    DescriptorArena(const DescriptorArena&) = delete;
    DescriptorArena& operator=(const DescriptorArena&) = delete;

    VkDescriptorSet write(const Dispatch& dispatch);
    void reset();

private:
    Device& device_;
    std::vector<VkDescriptorPool> pools_;
    size_t current_ = 0;
    VkDescriptorPool new_pool();
};

// Checks a dispatch against its pipeline's reflected interface (binding count, push size, limits).
void validate(const Device& device, const Dispatch& dispatch);
void record_dispatch(VkCommandBuffer command_buffer, const Dispatch& dispatch, VkDescriptorSet set);
// Makes every earlier shader or transfer write visible to every later shader, transfer or indirect read.
void record_full_barrier(VkCommandBuffer command_buffer);

// One-shot recording: each command waits for the previous one (a full barrier between them).
class Commands {
public:
    explicit Commands(Device& device);
    ~Commands();
    Commands(const Commands&) = delete;
    Commands& operator=(const Commands&) = delete;

    Commands& record(const Dispatch& dispatch);
    Commands& copy(const BufferRange& source, const BufferRange& destination);
    Commands& fill(const BufferRange& destination, uint32_t value);
    VkCommandBuffer handle() { return begin(); }
    // Submits what was recorded, waits, and leaves the object ready to record again.
    void submit_and_wait();

private:
    Device& device_;
    DescriptorArena descriptors_;
    VkCommandBuffer command_buffer_ = VK_NULL_HANDLE;
    bool recording_ = false;
    VkCommandBuffer begin();
    void before_command();
};

}  // namespace vkllm::gpu
