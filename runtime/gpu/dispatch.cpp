#include "gpu/dispatch.h"

#include "gpu/check.h"
#include "gpu/device.h"

namespace vkllm::gpu {

DescriptorArena::DescriptorArena(Device& device) : device_(device) {}

DescriptorArena::~DescriptorArena() {
    for (VkDescriptorPool pool : pools_) vkDestroyDescriptorPool(device_.handle(), pool, nullptr);
}

VkDescriptorPool DescriptorArena::new_pool() {
    VkDescriptorPoolSize sizes[] = {{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 4096},
                                    {VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER, 256},
                                    {VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER, 2048}};
    VkDescriptorPoolCreateInfo info{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
    info.maxSets = 1024;
    info.poolSizeCount = 3;
    info.pPoolSizes = sizes;
    VkDescriptorPool pool;
    VKLLM_VK_CHECK(vkCreateDescriptorPool(device_.handle(), &info, nullptr, &pool));
    pools_.push_back(pool);
    return pool;
}

VkDescriptorSet DescriptorArena::write(const Dispatch& dispatch) {
    const Pipeline& pipeline = *dispatch.pipeline;
    VkDescriptorSetAllocateInfo info{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
    info.descriptorSetCount = 1;
    info.pSetLayouts = &pipeline.set_layout;
    VkDescriptorSet set = VK_NULL_HANDLE;
    for (;;) {
        if (current_ == pools_.size()) new_pool();
        info.descriptorPool = pools_[current_];
        VkResult result = vkAllocateDescriptorSets(device_.handle(), &info, &set);
        if (result == VK_SUCCESS) break;
        if (result != VK_ERROR_OUT_OF_POOL_MEMORY && result != VK_ERROR_FRAGMENTED_POOL)
            check(result, "vkAllocateDescriptorSets");
        ++current_;
    }
    std::vector<VkDescriptorBufferInfo> buffers;
    buffers.reserve(dispatch.bindings.size());
    std::vector<VkBufferView> views;
    views.reserve(dispatch.bindings.size());
    std::vector<VkWriteDescriptorSet> writes;
    for (uint32_t i = 0; i < dispatch.bindings.size(); ++i) {
        const BufferRange& range = dispatch.bindings[i].range;
        VkWriteDescriptorSet write{VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
        write.dstSet = set;
        write.dstBinding = i;
        write.descriptorCount = 1;
        write.descriptorType = pipeline.info.bindings[i];
        if (write.descriptorType == VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER) {
            views.push_back(device_.allocator().texel_view(range));
            write.pTexelBufferView = &views.back();
        } else {
            buffers.push_back({range.buffer, range.offset, range.size});
            write.pBufferInfo = &buffers.back();
        }
        writes.push_back(write);
    }
    vkUpdateDescriptorSets(device_.handle(), uint32_t(writes.size()), writes.data(), 0, nullptr);
    return set;
}

void DescriptorArena::reset() {
    for (VkDescriptorPool pool : pools_) VKLLM_VK_CHECK(vkResetDescriptorPool(device_.handle(), pool, 0));
    current_ = 0;
}

void validate(const Device& device, const Dispatch& dispatch) {
    if (!dispatch.pipeline) fail("a dispatch without a pipeline");
    const Pipeline& pipeline = *dispatch.pipeline;
    if (dispatch.bindings.size() != pipeline.info.bindings.size())
        fail("pipeline '{}' binds {} buffers, the dispatch gives {}", pipeline.name, pipeline.info.bindings.size(),
             dispatch.bindings.size());
    if (dispatch.push.size() != pipeline.info.push_constant_bytes)
        fail("pipeline '{}' takes {} bytes of push constants, the dispatch gives {}", pipeline.name,
             pipeline.info.push_constant_bytes, dispatch.push.size());
    const Capabilities& caps = device.caps();
    for (const Binding& binding : dispatch.bindings)
        if (binding.range.size == 0 || binding.range.size > caps.max_storage_buffer_range)
            fail("pipeline '{}': a binding of {} bytes (device range {})", pipeline.name, binding.range.size,
                 caps.max_storage_buffer_range);
    for (int axis = 0; axis < 3; ++axis)
        if (!dispatch.indirect && (dispatch.groups[axis] == 0 || dispatch.groups[axis] > caps.max_workgroup_count[axis]))
            fail("pipeline '{}': {} workgroups along axis {} (device maximum {})", pipeline.name, dispatch.groups[axis],
                 axis, caps.max_workgroup_count[axis]);
}

void record_dispatch(VkCommandBuffer command_buffer, const Dispatch& dispatch, VkDescriptorSet set) {
    const Pipeline& pipeline = *dispatch.pipeline;
    vkCmdBindPipeline(command_buffer, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline.pipeline);
    vkCmdBindDescriptorSets(command_buffer, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline.layout, 0, 1, &set, 0, nullptr);
    if (!dispatch.push.empty())
        vkCmdPushConstants(command_buffer, pipeline.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0,
                           uint32_t(dispatch.push.size()), dispatch.push.data());
    if (dispatch.indirect)
        vkCmdDispatchIndirect(command_buffer, dispatch.indirect->buffer, dispatch.indirect->offset);
    else
        vkCmdDispatch(command_buffer, dispatch.groups[0], dispatch.groups[1], dispatch.groups[2]);
}

void record_full_barrier(VkCommandBuffer command_buffer) {
    VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                            VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_INDIRECT_COMMAND_READ_BIT;
    vkCmdPipelineBarrier(command_buffer, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                         VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT |
                             VK_PIPELINE_STAGE_DRAW_INDIRECT_BIT,
                         0, 1, &barrier, 0, nullptr, 0, nullptr);
}

Commands::Commands(Device& device) : device_(device), descriptors_(device) {}

Commands::~Commands() {
    if (command_buffer_) device_.free_command_buffer(command_buffer_);
}

VkCommandBuffer Commands::begin() {
    if (!command_buffer_) command_buffer_ = device_.allocate_command_buffer();
    if (!recording_) {
        VkCommandBufferBeginInfo info{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
        info.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
        VKLLM_VK_CHECK(vkBeginCommandBuffer(command_buffer_, &info));
        recording_ = true;
    }
    return command_buffer_;
}

// Each command waits for all earlier ones, including those of earlier submissions.
void Commands::before_command() { record_full_barrier(begin()); }

Commands& Commands::record(const Dispatch& dispatch) {
    validate(device_, dispatch);
    before_command();
    record_dispatch(command_buffer_, dispatch, descriptors_.write(dispatch));
    return *this;
}

Commands& Commands::copy(const BufferRange& source, const BufferRange& destination) {
    if (source.size != destination.size) fail("copy of {} bytes into a {}-byte range", source.size, destination.size);
    before_command();
    VkBufferCopy region{source.offset, destination.offset, source.size};
    vkCmdCopyBuffer(command_buffer_, source.buffer, destination.buffer, 1, &region);
    return *this;
}

Commands& Commands::fill(const BufferRange& destination, uint32_t value) {
    before_command();
    vkCmdFillBuffer(command_buffer_, destination.buffer, destination.offset, destination.size, value);
    return *this;
}

void Commands::submit_and_wait() {
    if (!recording_) return;
    // Make the results visible to host reads of mapped memory.
    VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    barrier.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
    vkCmdPipelineBarrier(command_buffer_, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                         VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &barrier, 0, nullptr, 0, nullptr);
    VKLLM_VK_CHECK(vkEndCommandBuffer(command_buffer_));
    recording_ = false;
    device_.submit_and_wait(command_buffer_);
    descriptors_.reset();
}

}  // namespace vkllm::gpu
