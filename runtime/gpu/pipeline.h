#pragma once
// Compute pipelines from the embedded SPIR-V, specialized and created on first use, and a
// VkPipelineCache kept on disk ($XDG_CACHE_HOME/vkllm) so GPU drivers skip recompiling next start.
// The file carries our own header (vendor, device, driver version, cache UUID, size, checksum) and is
// rejected with a note, then rebuilt, when it was written for another device or driver.
#include <volk.h>

#include <filesystem>
#include <initializer_list>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpu/capabilities.h"
#include "gpu/reflect.h"

namespace vkllm::gpu {

class Device;

struct PipelineOptions {
    std::vector<SpecConstant> spec;
    uint32_t required_subgroup_size = 0;  // 0: the driver's choice (needs subgroup size control)
    bool full_subgroups = false;  // every subgroup launched whole (needs computeFullSubgroups)
};

struct Pipeline {
    std::string name;
    ShaderInfo info;
    std::array<uint32_t, 3> local_size{};
    VkPipeline pipeline = VK_NULL_HANDLE;
    VkPipelineLayout layout = VK_NULL_HANDLE;
    VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;

    // Workgroups needed to cover `threads` invocations along x.
    uint32_t groups_x(uint64_t threads) const { return uint32_t((threads + local_size[0] - 1) / local_size[0]); }
};

enum class CacheLoad { Absent, Loaded, Rejected };

class PipelineCache {
public:
    explicit PipelineCache(Device& device);
    ~PipelineCache();  // saves the disk cache if pipelines were created
    PipelineCache(const PipelineCache&) = delete;
    PipelineCache& operator=(const PipelineCache&) = delete;

    const Pipeline& get(std::string_view name, const PipelineOptions& options = {});
    const Pipeline& get(std::string_view name, std::initializer_list<SpecConstant> spec) {
        return get(name, PipelineOptions{spec, 0});
    }

    void save();
    const std::filesystem::path& path() const { return path_; }
    CacheLoad load_result() const { return load_result_; }
    size_t created() const { return pipelines_.size(); }
    // Time spent creating pipelines (compiling, or reading the driver's cache), so that a first run's
    // speed can be reported without it.
    double creation_seconds() const { return creation_seconds_; }
    // Every pipeline created so far, by its key: the name, then each ":id=value" spec constant and
    // ":sgN" for a required subgroup size, ":full" for full subgroups.
    const std::map<std::string, std::unique_ptr<Pipeline>, std::less<>>& all() const { return pipelines_; }

private:
    Device& device_;
    VkPipelineCache cache_ = VK_NULL_HANDLE;
    std::filesystem::path path_;
    CacheLoad load_result_ = CacheLoad::Absent;
    bool dirty_ = false;
    double creation_seconds_ = 0;
    std::map<std::string, std::unique_ptr<Pipeline>, std::less<>> pipelines_;

    std::vector<char> load_disk_cache();
    std::unique_ptr<Pipeline> create(std::string_view name, const PipelineOptions& options);
};

// The SPIR-V of kernel `name` for a device: its `_basic` build (shaders/subgroup_ops.glsl) where the
// device lacks subgroup arithmetic or ballots in compute shaders and the kernel uses them.
std::span<const uint32_t> kernel_spirv(std::string_view name, const Capabilities& caps);

// Where the disk cache lives: VKLLM_CACHE_DIR, else $XDG_CACHE_HOME/vkllm, else ~/.cache/vkllm.
std::filesystem::path cache_directory();

}  // namespace vkllm::gpu
