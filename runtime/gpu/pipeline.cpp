#include "gpu/pipeline.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fmt/format.h>
#include <fstream>
#include <unistd.h>

#include "core/env.h"
#include "gpu/check.h"
#include "gpu/device.h"
#include "gpu/shaders.h"

namespace vkllm::gpu {
namespace {

constexpr char cache_magic[8] = {'V', 'K', 'L', 'L', 'M', 'P', 'C', '1'};

// Our header in front of the driver's cache data; the driver's own header is checked as well.
struct CacheHeader {
    char magic[8];
    uint32_t vendor_id, device_id, driver_version, reserved;
    uint8_t pipeline_cache_uuid[VK_UUID_SIZE];
    uint64_t data_bytes, data_checksum;
};

uint64_t fnv1a(std::span<const char> bytes) {
    uint64_t hash = 0xcbf29ce484222325ull;
    for (char c : bytes) hash = (hash ^ uint8_t(c)) * 0x100000001b3ull;
    return hash;
}

CacheHeader header_for(const Capabilities& caps) {
    CacheHeader header{};
    std::memcpy(header.magic, cache_magic, sizeof cache_magic);
    header.vendor_id = caps.vendor_id;
    header.device_id = caps.device_id;
    header.driver_version = caps.driver_version;
    std::memcpy(header.pipeline_cache_uuid, caps.pipeline_cache_uuid.data(), VK_UUID_SIZE);
    return header;
}

// Why `file` cannot be used on this device, or empty when it can.
std::string cache_mismatch(const std::vector<char>& file, const Capabilities& caps) {
    if (file.size() < sizeof(CacheHeader)) return "it is too short";
    CacheHeader header;
    std::memcpy(&header, file.data(), sizeof header);
    CacheHeader expected = header_for(caps);
    if (std::memcmp(header.magic, cache_magic, sizeof cache_magic) != 0) return "it is not a vkllm pipeline cache";
    if (header.vendor_id != expected.vendor_id || header.device_id != expected.device_id) return "it was written for another device";
    if (header.driver_version != expected.driver_version) return "it was written by another driver version";
    if (std::memcmp(header.pipeline_cache_uuid, expected.pipeline_cache_uuid, VK_UUID_SIZE) != 0)
        return "its pipeline cache UUID differs";
    std::span<const char> data(file.data() + sizeof header, file.size() - sizeof header);
    if (header.data_bytes != data.size() || header.data_checksum != fnv1a(data)) return "it is damaged";
    // The driver's header (VkPipelineCacheHeaderVersionOne) must agree too.
    VkPipelineCacheHeaderVersionOne driver_header;
    if (data.size() < sizeof driver_header) return "its driver data is too short";
    std::memcpy(&driver_header, data.data(), sizeof driver_header);
    if (driver_header.headerVersion != VK_PIPELINE_CACHE_HEADER_VERSION_ONE ||
        driver_header.vendorID != caps.vendor_id || driver_header.deviceID != caps.device_id ||
        std::memcmp(driver_header.pipelineCacheUUID, caps.pipeline_cache_uuid.data(), VK_UUID_SIZE) != 0)
        return "its driver header does not match the device";
    return {};
}

std::string uuid_hex(std::span<const uint8_t> uuid) {
    std::string out;
    for (uint8_t byte : uuid) out += fmt::format("{:02x}", byte);
    return out;
}

}  // namespace

std::filesystem::path cache_directory() {
    if (auto dir = env::get("VKLLM_CACHE_DIR"); dir && !dir->empty()) return *dir;
    if (auto xdg = env::get("XDG_CACHE_HOME"); xdg && !xdg->empty()) return std::filesystem::path(*xdg) / "vkllm";
    if (auto home = env::get("HOME"); home && !home->empty()) return std::filesystem::path(*home) / ".cache" / "vkllm";
    return {};
}

PipelineCache::PipelineCache(Device& device) : device_(device) {
    // Null hardware keeps no disk cache: nothing will ever run its pipelines.
    if (auto dir = cache_directory(); !dir.empty() && !device.caps().null_hardware)
        path_ = dir / ("pipelines-" + uuid_hex(device.caps().device_uuid) + ".bin");
    std::vector<char> initial = load_disk_cache();
    VkPipelineCacheCreateInfo info{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
    info.initialDataSize = initial.size();
    info.pInitialData = initial.empty() ? nullptr : initial.data();
    VKLLM_VK_CHECK(vkCreatePipelineCache(device.handle(), &info, nullptr, &cache_));
}

PipelineCache::~PipelineCache() {
    try {
        save();
    } catch (const std::exception& error) {
        std::fprintf(stderr, "vkllm: note: pipeline cache not saved: %s\n", error.what());
    }
    for (auto& [key, pipeline] : pipelines_) {
        vkDestroyPipeline(device_.handle(), pipeline->pipeline, nullptr);
        vkDestroyPipelineLayout(device_.handle(), pipeline->layout, nullptr);
        vkDestroyDescriptorSetLayout(device_.handle(), pipeline->set_layout, nullptr);
    }
    vkDestroyPipelineCache(device_.handle(), cache_, nullptr);
}

std::vector<char> PipelineCache::load_disk_cache() {
    if (path_.empty()) return {};
    std::ifstream in(path_, std::ios::binary);
    if (!in) return {};
    std::vector<char> file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (std::string why = cache_mismatch(file, device_.caps()); !why.empty()) {
        std::fprintf(stderr, "vkllm: note: ignoring pipeline cache %s: %s; rebuilding it\n", path_.c_str(), why.c_str());
        load_result_ = CacheLoad::Rejected;
        dirty_ = true;  // overwrite the stale file even if no new pipeline is created
        return {};
    }
    load_result_ = CacheLoad::Loaded;
    return std::vector<char>(file.begin() + sizeof(CacheHeader), file.end());
}

void PipelineCache::save() {
    if (!dirty_ || path_.empty()) return;
    size_t size = 0;
    VKLLM_VK_CHECK(vkGetPipelineCacheData(device_.handle(), cache_, &size, nullptr));
    std::vector<char> data(size);
    VKLLM_VK_CHECK(vkGetPipelineCacheData(device_.handle(), cache_, &size, data.data()));
    data.resize(size);
    CacheHeader header = header_for(device_.caps());
    header.data_bytes = data.size();
    header.data_checksum = fnv1a(data);

    std::filesystem::create_directories(path_.parent_path());
    // Write then rename, so a crash or a concurrent vkllm never leaves half a file behind.
    std::filesystem::path temporary = path_;
    temporary += fmt::format(".tmp{}-{}", ::getpid(), uintptr_t(this));
    {
        std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
        out.write(reinterpret_cast<const char*>(&header), sizeof header);
        out.write(data.data(), std::streamsize(data.size()));
        if (!out) fail("cannot write {}", temporary.string());
    }
    std::filesystem::rename(temporary, path_);
    dirty_ = false;
}

const Pipeline& PipelineCache::get(std::string_view name, const PipelineOptions& options) {
    std::string key(name);
    for (const SpecConstant& constant : options.spec) key += fmt::format(":{}={}", constant.id, constant.value);
    if (options.required_subgroup_size) key += fmt::format(":sg{}", options.required_subgroup_size);
    if (options.full_subgroups) key += ":full";
    if (auto it = pipelines_.find(key); it != pipelines_.end()) return *it->second;
    const auto started = std::chrono::steady_clock::now();
    auto [it, inserted] = pipelines_.emplace(key, create(name, options));
    creation_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    dirty_ = true;
    return *it->second;
}

std::span<const uint32_t> kernel_spirv(std::string_view name, const Capabilities& caps) {
    const bool basic_only =
        !caps.has_subgroup(VK_SUBGROUP_FEATURE_ARITHMETIC_BIT) || !caps.has_subgroup(VK_SUBGROUP_FEATURE_BALLOT_BIT);
    if (basic_only) {
        const std::string basic = std::string(name) + "_basic";
        for (const shaders::Embedded& shader : shaders::all())
            if (shader.name == basic) return shader.spirv;
    }
    return shaders::find(name);
}

std::unique_ptr<Pipeline> PipelineCache::create(std::string_view name, const PipelineOptions& options) {
    std::span<const uint32_t> spirv = kernel_spirv(name, device_.caps());
    auto pipeline = std::make_unique<Pipeline>();
    pipeline->name = name;
    pipeline->info = reflect(name, spirv);
    pipeline->local_size = pipeline->info.local_size_with(options.spec);
    const Capabilities& caps = device_.caps();
    uint32_t invocations = pipeline->local_size[0] * pipeline->local_size[1] * pipeline->local_size[2];
    if (invocations == 0 || invocations > caps.max_workgroup_invocations)
        fail("pipeline '{}': workgroup of {} invocations (device maximum {})", name, invocations, caps.max_workgroup_invocations);
    if (pipeline->info.push_constant_bytes > caps.max_push_constants)
        fail("pipeline '{}': {} bytes of push constants (device maximum {})", name,
             pipeline->info.push_constant_bytes, caps.max_push_constants);
    if (options.required_subgroup_size &&
        (!caps.subgroup_size_control || options.required_subgroup_size < caps.min_subgroup_size ||
         options.required_subgroup_size > caps.max_subgroup_size))
        fail("pipeline '{}': subgroup size {} is not available on {}", name, options.required_subgroup_size, caps.name);
    if (options.full_subgroups && !caps.compute_full_subgroups)
        fail("pipeline '{}': {} cannot launch full subgroups only", name, caps.name);

    std::vector<VkDescriptorSetLayoutBinding> bindings;
    for (uint32_t i = 0; i < pipeline->info.bindings.size(); ++i)
        bindings.push_back({i, pipeline->info.bindings[i], 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr});
    VkDescriptorSetLayoutCreateInfo set_info{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
    set_info.bindingCount = uint32_t(bindings.size());
    set_info.pBindings = bindings.data();
    VKLLM_VK_CHECK(vkCreateDescriptorSetLayout(device_.handle(), &set_info, nullptr, &pipeline->set_layout));

    VkPushConstantRange push_range{VK_SHADER_STAGE_COMPUTE_BIT, 0, pipeline->info.push_constant_bytes};
    VkPipelineLayoutCreateInfo layout_info{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    layout_info.setLayoutCount = 1;
    layout_info.pSetLayouts = &pipeline->set_layout;
    layout_info.pushConstantRangeCount = push_range.size ? 1 : 0;
    layout_info.pPushConstantRanges = &push_range;
    VKLLM_VK_CHECK(vkCreatePipelineLayout(device_.handle(), &layout_info, nullptr, &pipeline->layout));

    VkShaderModuleCreateInfo module_info{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
    module_info.codeSize = spirv.size_bytes();
    module_info.pCode = spirv.data();
    VkShaderModule module;
    VKLLM_VK_CHECK(vkCreateShaderModule(device_.handle(), &module_info, nullptr, &module));

    std::vector<VkSpecializationMapEntry> entries;
    std::vector<uint32_t> values;
    for (const SpecConstant& constant : options.spec) {
        entries.push_back({constant.id, uint32_t(values.size() * 4), 4});
        values.push_back(constant.value);
    }
    VkSpecializationInfo specialization{uint32_t(entries.size()), entries.data(), values.size() * 4, values.data()};
    VkPipelineShaderStageRequiredSubgroupSizeCreateInfo subgroup_size{
        VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO};
    subgroup_size.requiredSubgroupSize = options.required_subgroup_size;

    VkComputePipelineCreateInfo info{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
    info.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
    info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    info.stage.module = module;
    info.stage.pName = "main";
    info.stage.pSpecializationInfo = entries.empty() ? nullptr : &specialization;
    if (options.required_subgroup_size) info.stage.pNext = &subgroup_size;
    if (options.full_subgroups) info.stage.flags |= VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT;
    info.layout = pipeline->layout;
    if (device_.pipeline_statistics()) info.flags |= VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR;
    VkResult result = vkCreateComputePipelines(device_.handle(), cache_, 1, &info, nullptr, &pipeline->pipeline);
    vkDestroyShaderModule(device_.handle(), module, nullptr);
    check(result, "vkCreateComputePipelines");
    return pipeline;
}

}  // namespace vkllm::gpu
