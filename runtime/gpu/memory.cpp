#include "gpu/memory.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "core/env.h"
#include "core/error.h"
#include "gpu/check.h"
#include "gpu/device.h"

namespace vkllm::gpu {
namespace {

constexpr VkDeviceSize default_block_size = 256ull << 20;
constexpr VkBufferUsageFlags block_usage =
    VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT | VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT |
    VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT | VK_BUFFER_USAGE_INDIRECT_BUFFER_BIT;

VkDeviceSize align_up(VkDeviceSize value, VkDeviceSize alignment) {
    return (value + alignment - 1) / alignment * alignment;
}

VkBuffer create_vk_buffer(VkDevice device, VkDeviceSize size) {
    VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    info.size = size;
    info.usage = block_usage;
    info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    VkBuffer buffer;
    VKLLM_VK_CHECK(vkCreateBuffer(device, &info, nullptr, &buffer));
    return buffer;
}

struct DomainFlags {
    VkMemoryPropertyFlags required, preferred, avoided = 0;
};

DomainFlags flags_for(MemoryDomain domain) {
    constexpr auto local = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
    constexpr auto visible = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    switch (domain) {
        case MemoryDomain::Device: return {0, local};
        case MemoryDomain::DeviceMapped: return {visible, local};
        case MemoryDomain::Upload: return {visible, 0};
        case MemoryDomain::Readback: return {visible, VK_MEMORY_PROPERTY_HOST_CACHED_BIT};
        case MemoryDomain::Host: return {visible, 0, local};
    }
    return {0, 0};
}

}  // namespace

BufferRange BufferRange::sub(VkDeviceSize sub_offset, VkDeviceSize sub_size) const {
    if (sub_offset + sub_size > size) fail("buffer range [{}, +{}) is outside a {}-byte range", sub_offset, sub_size, size);
    return {buffer, offset + sub_offset, sub_size, mapped ? mapped + sub_offset : nullptr};
}

Buffer::Buffer(Buffer&& other) noexcept { *this = std::move(other); }

Buffer& Buffer::operator=(Buffer&& other) noexcept {
    if (this == &other) return *this;
    release();
    allocator_ = std::exchange(other.allocator_, nullptr);
    size_ = std::exchange(other.size_, 0);
    segments_ = std::move(other.segments_);
    pieces_ = std::move(other.pieces_);
    other.segments_.clear();
    other.pieces_.clear();
    return *this;
}

Buffer::~Buffer() { release(); }

void Buffer::release() {
    for (const Piece& piece : pieces_) allocator_->free(piece);
    pieces_.clear();
    segments_.clear();
    size_ = 0;
}

const BufferRange& Buffer::range() const {
    if (segments_.size() != 1) fail("a buffer split into {} segments cannot be bound as one range", segments_.size());
    return segments_[0];
}

void Buffer::fail_outside(VkDeviceSize offset, VkDeviceSize size) const {
    fail("access to [{}, +{}) is outside a {}-byte buffer", offset, size, size_);
}

void Buffer::write(VkDeviceSize offset, std::span<const std::byte> bytes) const {
    if (!host_visible()) fail("buffer is not host-visible");
    for_each_segment(offset, bytes.size(), [&](const BufferRange& segment, VkDeviceSize within, VkDeviceSize from,
                                               VkDeviceSize count) {
        std::memcpy(segment.mapped + within, bytes.data() + from, count);
    });
}

void Buffer::read(VkDeviceSize offset, std::span<std::byte> bytes) const {
    if (!host_visible()) fail("buffer is not host-visible");
    for_each_segment(offset, bytes.size(), [&](const BufferRange& segment, VkDeviceSize within, VkDeviceSize from,
                                               VkDeviceSize count) {
        std::memcpy(bytes.data() + from, segment.mapped + within, count);
    });
}

Allocator::Allocator(Device& device, VkPhysicalDevice physical) : device_(device) {
    vkGetPhysicalDeviceMemoryProperties(physical, &memory_properties_);
    const Capabilities& caps = device.caps();
    max_range_ = caps.max_storage_buffer_range;
    if (auto limit = env::bytes("VKLLM_MAX_BUFFER_RANGE")) max_range_ = std::min<VkDeviceSize>(max_range_, *limit);
    max_block_ = std::min(caps.max_memory_allocation_size, caps.max_buffer_size);
    // Offsets serve as descriptor offsets and as host-mapped pointers of vec4 data.
    alignment_ = std::max<VkDeviceSize>({caps.min_storage_buffer_offset_alignment, caps.non_coherent_atom_size,
                                         caps.min_texel_buffer_offset_alignment, 64});
    max_range_ = max_range_ / 4 * 4;

    if (caps.null_hardware) {
        // No memory at all: blocks are buffers with none bound, a device-local type and a host-visible
        // one whose blocks the host's writes land in; nothing ever reads either.
        memory_properties_.memoryTypeCount = 2;
        memory_properties_.memoryTypes[0].propertyFlags = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
        memory_properties_.memoryTypes[1].propertyFlags = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                                          VK_MEMORY_PROPERTY_HOST_COHERENT_BIT |
                                                          VK_MEMORY_PROPERTY_HOST_CACHED_BIT;
        buffer_memory_types_ = 0b11;
        return;
    }
    VkBuffer probe = create_vk_buffer(device.handle(), 4096);
    VkMemoryRequirements requirements;
    vkGetBufferMemoryRequirements(device.handle(), probe, &requirements);
    vkDestroyBuffer(device.handle(), probe, nullptr);
    buffer_memory_types_ = requirements.memoryTypeBits;
}

Allocator::~Allocator() {
    for (auto& block : blocks_)
        if (block) destroy_block(*block);
}

void Allocator::destroy_block(Block& block) {
    for (auto [key, view] : block.texel_views) vkDestroyBufferView(device_.handle(), view, nullptr);
    vkDestroyBuffer(device_.handle(), block.buffer, nullptr);
    vkFreeMemory(device_.handle(), block.memory, nullptr);
}

VkBufferView Allocator::texel_view(const BufferRange& range) {
    constexpr VkDeviceSize texel_bytes = 16;
    auto block = std::find_if(blocks_.begin(), blocks_.end(), [&](const auto& b) { return b && b->buffer == range.buffer; });
    if (block == blocks_.end()) fail("a texel buffer binding of memory the allocator does not own");
    const VkDeviceSize size = align_up(range.size, texel_bytes);
    const Capabilities& caps = device_.caps();
    if (range.offset % std::max<VkDeviceSize>(caps.min_texel_buffer_offset_alignment, 1) != 0 ||
        range.offset + size > (*block)->size || size / texel_bytes > caps.max_texel_buffer_elements)
        fail("a texel buffer binding of {} bytes at offset {} does not fit the device's texel buffer limits", range.size,
             range.offset);
    VkBufferView& view = (*block)->texel_views[{range.offset, size}];
    if (!view) {
        VkBufferViewCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_VIEW_CREATE_INFO};
        info.buffer = range.buffer;
        info.format = VK_FORMAT_R32G32B32A32_UINT;
        info.offset = range.offset;
        info.range = size;
        VKLLM_VK_CHECK(vkCreateBufferView(device_.handle(), &info, nullptr, &view));
    }
    return view;
}

uint32_t Allocator::memory_type_for(MemoryDomain domain, uint32_t allowed_types) const {
    DomainFlags flags = flags_for(domain);
    // The first type with the required flags, ranked: the preferred ones, then none of the avoided.
    uint32_t best = UINT32_MAX, best_rank = 0;
    for (uint32_t i = 0; i < memory_properties_.memoryTypeCount; ++i) {
        VkMemoryPropertyFlags have = memory_properties_.memoryTypes[i].propertyFlags;
        if (!(allowed_types & (1u << i)) || (have & flags.required) != flags.required) continue;
        const uint32_t rank = 1 + 2 * ((have & flags.preferred) == flags.preferred) + ((have & flags.avoided) == 0);
        if (rank > best_rank) best = i, best_rank = rank;
    }
    if (best == UINT32_MAX) fail("the device has no memory type usable for storage buffers in this domain");
    return best;
}

size_t Allocator::create_block(VkDeviceSize size, uint32_t memory_type) {
    auto block = std::make_unique<Block>();
    block->size = size;
    block->memory_type = memory_type;
    block->buffer = create_vk_buffer(device_.handle(), size);
    if (device_.caps().null_hardware) {
        if (memory_properties_.memoryTypes[memory_type].propertyFlags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) {
            block->host_stand_in.reset(new std::byte[size]);  // left uninitialized: pages untouched stay free
            block->mapped = block->host_stand_in.get();
        }
        block->free_ranges[0] = size;
        blocks_.push_back(std::move(block));
        return blocks_.size() - 1;
    }
    VkMemoryRequirements requirements;
    vkGetBufferMemoryRequirements(device_.handle(), block->buffer, &requirements);
    VkMemoryAllocateInfo info{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    info.allocationSize = requirements.size;
    info.memoryTypeIndex = memory_type;
    VkResult result = vkAllocateMemory(device_.handle(), &info, nullptr, &block->memory);
    if (result != VK_SUCCESS) {
        vkDestroyBuffer(device_.handle(), block->buffer, nullptr);
        if (result == VK_ERROR_OUT_OF_DEVICE_MEMORY || result == VK_ERROR_OUT_OF_HOST_MEMORY)
            fail("out of GPU memory allocating a {} MiB block ({} MiB already allocated)", size >> 20,
                 stats().block_bytes >> 20);
        check(result, "vkAllocateMemory");
    }
    VKLLM_VK_CHECK(vkBindBufferMemory(device_.handle(), block->buffer, block->memory, 0));
    if (memory_properties_.memoryTypes[memory_type].propertyFlags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) {
        void* mapped = nullptr;
        VKLLM_VK_CHECK(vkMapMemory(device_.handle(), block->memory, 0, VK_WHOLE_SIZE, 0, &mapped));
        block->mapped = static_cast<std::byte*>(mapped);
    }
    block->free_ranges[0] = size;
    blocks_.push_back(std::move(block));
    return blocks_.size() - 1;
}

Buffer::Piece Allocator::allocate(VkDeviceSize size, uint32_t memory_type) {
    size = align_up(size, alignment_);
    for (size_t b = 0; b < blocks_.size(); ++b) {
        Block* block = blocks_[b].get();
        if (!block || block->memory_type != memory_type) continue;
        for (auto it = block->free_ranges.begin(); it != block->free_ranges.end(); ++it) {
            auto [offset, free_size] = *it;
            if (free_size < size) continue;
            block->free_ranges.erase(it);
            if (free_size > size) block->free_ranges[offset + size] = free_size - size;
            count_used(size);
            return {b, offset, size};
        }
    }
    VkDeviceSize block_size = std::min(max_block_, std::max(default_block_size, size));
    if (size > block_size) fail("a {}-byte allocation exceeds the device's {}-byte allocation limit", size, max_block_);
    size_t b = create_block(block_size, memory_type);
    Block* block = blocks_[b].get();
    block->free_ranges.erase(0);
    if (block_size > size) block->free_ranges[size] = block_size - size;
    count_used(size);
    return {b, 0, size};
}

void Allocator::count_used(VkDeviceSize size) {
    used_bytes_ += size;
    peak_used_bytes_ = std::max(peak_used_bytes_, used_bytes_);
}

void Allocator::free(const Buffer::Piece& piece) {
    used_bytes_ -= piece.size;
    Block* block = blocks_[piece.block].get();
    auto [it, inserted] = block->free_ranges.emplace(piece.offset, piece.size);
    if (auto next = std::next(it); next != block->free_ranges.end() && it->first + it->second == next->first) {
        it->second += next->second;
        block->free_ranges.erase(next);
    }
    if (it != block->free_ranges.begin()) {
        auto previous = std::prev(it);
        if (previous->first + previous->second == it->first) {
            previous->second += it->second;
            block->free_ranges.erase(it);
        }
    }
    // An entirely free block goes back to the driver, so a model unload returns its memory.
    if (block->free_ranges.size() == 1 && block->free_ranges.begin()->second == block->size) {
        destroy_block(*block);
        blocks_[piece.block].reset();
    }
}

Buffer Allocator::create(VkDeviceSize size, MemoryDomain domain, VkDeviceSize split_granularity) {
    if (size == 0) fail("cannot create an empty GPU buffer");
    VkDeviceSize segment_size = size;
    if (size > max_range_) {
        if (split_granularity == 0)
            fail("a {}-byte buffer exceeds the device's {}-byte binding range and cannot be split", size, max_range_);
        if (split_granularity > max_range_)
            fail("split granularity {} exceeds the device's {}-byte binding range", split_granularity, max_range_);
        segment_size = max_range_ / split_granularity * split_granularity;
    }
    uint32_t memory_type = memory_type_for(domain, buffer_memory_types_);

    Buffer buffer;
    buffer.allocator_ = this;
    buffer.size_ = size;
    for (VkDeviceSize offset = 0; offset < size; offset += segment_size) {
        VkDeviceSize piece_size = std::min(segment_size, size - offset);
        Buffer::Piece piece = allocate(piece_size, memory_type);
        buffer.pieces_.push_back(piece);
        const Block& block = *blocks_[piece.block];
        buffer.segments_.push_back({block.buffer, piece.offset, piece_size,
                                    block.mapped ? block.mapped + piece.offset : nullptr});
    }
    return buffer;
}

MemoryStats Allocator::stats() const {
    MemoryStats stats;
    stats.peak_used_bytes = peak_used_bytes_;
    for (const auto& block : blocks_) {
        if (!block) continue;
        ++stats.blocks;
        stats.block_bytes += block->size;
        VkDeviceSize free_bytes = 0;
        for (auto [offset, size] : block->free_ranges) free_bytes += size;
        stats.used_bytes += block->size - free_bytes;
    }
    return stats;
}

}  // namespace vkllm::gpu
