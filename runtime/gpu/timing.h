#pragma once
// GPU timestamps around regions of a command buffer: begin(label) ... end(), read after the submit.
#include <volk.h>

#include <string>
#include <vector>

namespace vkllm::gpu {

class Device;

class Timestamps {
public:
    Timestamps(Device& device, uint32_t max_regions);
    ~Timestamps();
    Timestamps(const Timestamps&) = delete;
    Timestamps& operator=(const Timestamps&) = delete;

    // Recorded into a command buffer; reset() goes before the first begin().
    void reset(VkCommandBuffer command_buffer);
    void begin(VkCommandBuffer command_buffer, std::string label);
    void end(VkCommandBuffer command_buffer);

    struct Region {
        std::string label;
        double milliseconds;
    };
    // After the command buffer completed.
    std::vector<Region> read() const;

private:
    Device& device_;
    VkQueryPool pool_ = VK_NULL_HANDLE;
    uint32_t capacity_;
    std::vector<std::string> labels_;
    bool open_ = false;
};

}  // namespace vkllm::gpu
