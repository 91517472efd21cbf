#pragma once
// GPU memory: large blocks (each at most maxMemoryAllocationSize, one VkBuffer spanning each) carved
// into buffers. A logical buffer larger than maxStorageBufferRange (or VKLLM_MAX_BUFFER_RANGE) is
// split into segments, each bindable on its own; the caller gives the granularity (a row's bytes) so
// no row straddles two segments.
#include <volk.h>

#include <algorithm>
#include <cstddef>
#include <map>
#include <memory>
#include <span>
#include <vector>

namespace vkllm::gpu {

class Device;

enum class MemoryDomain {
    Device,        // device-local; the host may not be able to map it
    DeviceMapped,  // device-local and host-visible where the device has it (integrated, ReBAR, CPU)
    Upload,        // host-visible staging memory the device reads
    Readback,      // host-visible, cached: the device writes, the host reads
    Host,          // host memory the device reads, not device-local where the device has such a type:
                   // weights that do not fit device-local memory (model/memory_plan.h)
};

// A bindable range of one VkBuffer; `mapped` points at its first byte when the host can see it.
// Every range the allocator hands out starts at a multiple of 64 bytes and owns the memory up to
// the next multiple of 64, so a kernel may read a range's last bytes as whole 32-bit words.
struct BufferRange {
    VkBuffer buffer = VK_NULL_HANDLE;
    VkDeviceSize offset = 0;
    VkDeviceSize size = 0;
    std::byte* mapped = nullptr;

    BufferRange sub(VkDeviceSize sub_offset, VkDeviceSize sub_size) const;
};

class Allocator;

class Buffer {
public:
    Buffer() = default;
    Buffer(Buffer&& other) noexcept;
    Buffer& operator=(Buffer&& other) noexcept;
    ~Buffer();

    VkDeviceSize size() const { return size_; }
    bool empty() const { return segments_.empty(); }
    std::span<const BufferRange> segments() const { return segments_; }
    // Every segment but the last has this many bytes.
    VkDeviceSize segment_size() const { return segments_.empty() ? 0 : segments_[0].size; }
    // The whole buffer as one range; only for a buffer that was not split.
    const BufferRange& range() const;
    bool host_visible() const { return !segments_.empty() && segments_[0].mapped; }

    // Host access through the mapping, across segments (host-visible buffers only).
    void write(VkDeviceSize offset, std::span<const std::byte> bytes) const;
    void read(VkDeviceSize offset, std::span<std::byte> bytes) const;

    // Calls visit(segment, offset within it, offset within the range, bytes) for each piece of
    // [offset, offset + size) that lies in one segment, in order.
    template <class Visit>
    void for_each_segment(VkDeviceSize offset, VkDeviceSize size, Visit visit) const {
        if (offset + size > size_) fail_outside(offset, size);
        for (VkDeviceSize done = 0; done < size;) {
            const VkDeviceSize at = offset + done;
            const BufferRange& segment = segments_[at / segment_size()];
            const VkDeviceSize within = at % segment_size();
            const VkDeviceSize count = std::min(size - done, segment.size - within);
            visit(segment, within, done, count);
            done += count;
        }
    }

private:
    friend class Allocator;
    struct Piece {
        size_t block;
        VkDeviceSize offset, size;
    };
    Allocator* allocator_ = nullptr;
    VkDeviceSize size_ = 0;
    std::vector<BufferRange> segments_;
    std::vector<Piece> pieces_;
    void release();
    [[noreturn]] void fail_outside(VkDeviceSize offset, VkDeviceSize size) const;
};

struct MemoryStats {
    uint64_t block_bytes = 0;  // allocated from the driver
    uint64_t used_bytes = 0;   // handed out to buffers
    size_t blocks = 0;
    uint64_t peak_used_bytes = 0;  // the most used_bytes ever was
};

class Allocator {
public:
    Allocator(Device& device, VkPhysicalDevice physical);
    ~Allocator();
    Allocator(const Allocator&) = delete;
    Allocator& operator=(const Allocator&) = delete;

    // split_granularity = 0: the buffer must fit one binding (throws otherwise).
    Buffer create(VkDeviceSize size, MemoryDomain domain, VkDeviceSize split_granularity = 0);
    // A uniform texel buffer view of `range` as uvec4 texels (R32G32B32A32_UINT), made on first use
    // and kept while its block lives. The range must come from this allocator; its size is rounded
    // up to whole texels, which the 64-byte granularity of every range keeps inside its memory.
    VkBufferView texel_view(const BufferRange& range);
    // Largest bindable range: maxStorageBufferRange, lowered by VKLLM_MAX_BUFFER_RANGE.
    VkDeviceSize max_binding_range() const { return max_range_; }
    MemoryStats stats() const;

private:
    friend class Buffer;
    struct Block {
        VkDeviceMemory memory = VK_NULL_HANDLE;
        VkBuffer buffer = VK_NULL_HANDLE;
        VkDeviceSize size = 0;
        uint32_t memory_type = 0;
        std::byte* mapped = nullptr;
        std::unique_ptr<std::byte[]> host_stand_in;  // null hardware: what `mapped` points at
        std::map<VkDeviceSize, VkDeviceSize> free_ranges;  // offset -> size, coalesced
        std::map<std::pair<VkDeviceSize, VkDeviceSize>, VkBufferView> texel_views;  // (offset, size) -> view
    };
    Device& device_;
    VkPhysicalDeviceMemoryProperties memory_properties_{};
    VkDeviceSize max_range_ = 0, max_block_ = 0, alignment_ = 0;
    uint32_t buffer_memory_types_ = 0;  // memory types our storage buffers may live in
    std::vector<std::unique_ptr<Block>> blocks_;  // a freed block's slot stays, empty
    uint64_t used_bytes_ = 0, peak_used_bytes_ = 0;

    uint32_t memory_type_for(MemoryDomain domain, uint32_t allowed_types) const;
    Buffer::Piece allocate(VkDeviceSize size, uint32_t memory_type);
    size_t create_block(VkDeviceSize size, uint32_t memory_type);
    void free(const Buffer::Piece& piece);
    void count_used(VkDeviceSize size);
    void destroy_block(Block& block);
};

}  // namespace vkllm::gpu
