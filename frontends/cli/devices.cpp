// vkllm devices [--json]: every Vulkan device, what it can do, and which one vkllm would choose.
#include <cstdio>
#include <fmt/format.h>
#include <string>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "core/env.h"
#include "core/error.h"
#include "gpu/device.h"
#include "gpu/pipeline.h"
#include "ops/tuning.h"
#include "options.h"

namespace vkllm::cli {
namespace {

std::string mib(uint64_t bytes) { return fmt::format("{} MiB", bytes >> 20); }

std::string uuid_text(std::span<const uint8_t> uuid) {
    std::string out;
    for (size_t i = 0; i < uuid.size(); ++i) {
        if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
        out += fmt::format("{:02x}", uuid[i]);
    }
    return out;
}

// "16x16x16 f16 x f16 + f32 -> f32, ...", wrapped under the table's values.
std::string matrix_shapes(const gpu::Capabilities& caps) {
    std::string out, line;
    for (const gpu::CooperativeMatrixShape& shape : caps.cooperative_matrix_shapes) {
        const std::string item = shape.text() + (&shape == &caps.cooperative_matrix_shapes.back() ? "" : ",");
        if (!line.empty() && line.size() + 1 + item.size() > 80) {
            out += line + "\n" + std::string(22, ' ');
            line.clear();
        }
        line += (line.empty() ? "" : " ") + item;
    }
    return out + (line.empty() ? "none" : line);
}

// vkllm tune's launch shapes for the device (ops/tuning.h): its file and the entries the device can run.
nlohmann::json tuning_summary(const gpu::Capabilities& caps) {
    nlohmann::json shapes = nlohmann::json::array();
    const ops::Tuning& tuning = ops::device_tuning(caps);
    for (const ops::TunedMatvec& entry : tuning.matvec) shapes.push_back(ops::describe(entry));
    for (const ops::TunedMatmul& entry : tuning.matmul) shapes.push_back(ops::describe(entry));
    return {{"file", ops::tuning_path(caps).string()}, {"shapes", shapes}};
}

nlohmann::json to_json(const gpu::Capabilities& caps) {
    nlohmann::json heaps = nlohmann::json::array();
    for (const auto& heap : caps.heaps) heaps.push_back({{"bytes", heap.size}, {"device_local", heap.device_local}});
    nlohmann::json matrix_products = nlohmann::json::array();
    for (const gpu::CooperativeMatrixShape& shape : caps.cooperative_matrix_shapes)
        matrix_products.push_back(shape.text());
    return {
        {"name", caps.name},
        {"type", caps.type_name()},
        {"vendor_id", caps.vendor_id},
        {"device_id", caps.device_id},
        {"api_version", fmt::format("{}.{}.{}", VK_API_VERSION_MAJOR(caps.api_version),
                                    VK_API_VERSION_MINOR(caps.api_version), VK_API_VERSION_PATCH(caps.api_version))},
        {"driver", {{"name", caps.driver_name}, {"info", caps.driver_info}, {"version", caps.driver_version_string()}}},
        {"device_uuid", uuid_text(caps.device_uuid)},
        {"float16", caps.float16},
        {"int8", caps.int8},
        {"int16", caps.int16},
        {"int64", caps.int64},
        {"storage_buffer_16bit", caps.storage_buffer_16bit},
        {"storage_buffer_8bit", caps.storage_buffer_8bit},
        {"uses_float16", caps.use_float16()},
        {"subgroup", {{"size", caps.subgroup_size}, {"min_size", caps.min_subgroup_size},
                      {"max_size", caps.max_subgroup_size}, {"size_control", caps.subgroup_size_control},
                      {"operations", gpu::subgroup_operation_names(caps.subgroup_operations)}}},
        {"compute_units", caps.compute_units},
        {"max_shared_memory", caps.max_shared_memory},
        {"max_workgroup_invocations", caps.max_workgroup_invocations},
        {"max_workgroup_size", caps.max_workgroup_size},
        {"max_storage_buffer_range", caps.max_storage_buffer_range},
        {"max_memory_allocation_size", caps.max_memory_allocation_size},
        {"max_buffer_size", caps.max_buffer_size},
        {"maintenance4", caps.maintenance4},
        {"cooperative_matrix", {{"supported", caps.cooperative_matrix}, {"products", matrix_products},
                                {"kernels", caps.coopmat_kernels()}}},
        {"integer_dot_product", caps.integer_dot_product},
        {"integer_dot_product_accelerated", caps.integer_dot_product_accelerated},
        {"timestamps", {{"compute", caps.compute_timestamps}, {"valid_bits", caps.timestamp_valid_bits},
                        {"period_ns", caps.timestamp_period_ns}}},
        {"unified_memory", caps.unified_memory()},
        {"heaps", heaps},
        {"missing_requirements", gpu::missing_requirements(caps)},
        {"tuning", tuning_summary(caps)},
    };
}

void print_table(const gpu::DeviceChoice& choice) {
    for (size_t i = 0; i < choice.devices.size(); ++i) {
        const gpu::Capabilities& caps = choice.devices[i];
        auto yes = [](bool value) { return value ? "yes" : "no"; };
        std::printf("%s device %zu: %s (%s)\n", i == choice.chosen ? "*" : " ", i, caps.name.c_str(), caps.type_name().c_str());
        std::printf("    driver            %s %s (%s), Vulkan %u.%u.%u\n", caps.driver_name.c_str(),
                    caps.driver_version_string().c_str(), caps.driver_info.c_str(), VK_API_VERSION_MAJOR(caps.api_version),
                    VK_API_VERSION_MINOR(caps.api_version), VK_API_VERSION_PATCH(caps.api_version));
        std::printf("    arithmetic        fp16 %s, int8 %s, int16 %s, int64 %s; fp16 kernels %s\n", yes(caps.float16),
                    yes(caps.int8), yes(caps.int16), yes(caps.int64), caps.use_float16() ? "on" : "off");
        std::printf("    storage           16-bit %s, 8-bit %s\n", yes(caps.storage_buffer_16bit), yes(caps.storage_buffer_8bit));
        std::printf("    subgroups         size %u (%u-%u, size control %s): %s\n", caps.subgroup_size,
                    caps.min_subgroup_size, caps.max_subgroup_size, yes(caps.subgroup_size_control),
                    gpu::subgroup_operation_names(caps.subgroup_operations).c_str());
        std::printf("    workgroups        %u invocations, %u x %u x %u, %u KiB shared memory; compute units %s\n",
                    caps.max_workgroup_invocations, caps.max_workgroup_size[0], caps.max_workgroup_size[1],
                    caps.max_workgroup_size[2], caps.max_shared_memory >> 10,
                    caps.compute_units ? std::to_string(caps.compute_units).c_str() : "not reported");
        std::printf("    buffers           binding range %s, allocation %s, buffer %s, maintenance4 %s\n",
                    mib(caps.max_storage_buffer_range).c_str(), mib(caps.max_memory_allocation_size).c_str(),
                    mib(caps.max_buffer_size).c_str(), yes(caps.maintenance4));
        std::printf("    matrix/dot        cooperative matrix %s, integer dot product %s%s\n", yes(caps.cooperative_matrix),
                    yes(caps.integer_dot_product), caps.integer_dot_product_accelerated ? " (accelerated)" : "");
        if (caps.cooperative_matrix) {
            std::printf("    matrix products   %s\n", matrix_shapes(caps).c_str());
            std::printf("    matrix kernels    %s\n",
                        caps.coopmat_kernels() ? "on (prefill of quantized, f16 and bf16 weights; VKLLM_COOPMAT=0 turns them off)"
                        : env::get("VKLLM_COOPMAT") == "0" ? "off (VKLLM_COOPMAT=0)"
                                                           : "off (the device or this build cannot run them)");
        }
        std::printf("    timestamps        %s, %u valid bits, %.3g ns per tick\n", yes(caps.compute_timestamps),
                    caps.timestamp_valid_bits, double(caps.timestamp_period_ns));
        std::string heaps;
        for (const auto& heap : caps.heaps) heaps += fmt::format("{}{}{}", heaps.empty() ? "" : ", ", mib(heap.size), heap.device_local ? " device-local" : "");
        std::printf("    memory            %s%s\n", heaps.c_str(), caps.unified_memory() ? " (host-mappable device memory)" : "");
        const nlohmann::json tuning = tuning_summary(caps);
        if (tuning["shapes"].empty()) {
            std::printf("    tuned shapes      none (vkllm tune -m MODEL measures them)\n");
        } else {
            std::printf("    tuned shapes      %zu, from %s:\n", tuning["shapes"].size(),
                        tuning["file"].get<std::string>().c_str());
            for (const nlohmann::json& shape : tuning["shapes"])
                std::printf("                      %s\n", shape.get<std::string>().c_str());
        }
        if (std::string missing = gpu::missing_requirements(caps); !missing.empty())
            std::printf("    cannot run vkllm: %s\n", missing.c_str());
    }
    std::printf("* = chosen (select with --device INDEX|NAME or VKLLM_DEVICE)\n");
}

}  // namespace

int devices(Args args) {
    bool json = false;
    std::optional<std::string> selector;
    Options parser("devices", "[--json] [--device I|NAME]",
                   "Every Vulkan device, what it can do, and which one vkllm chooses (VKLLM_DEVICE or --device picks "
                   "another).");
    parser.flag("--json", json, "print the devices as JSON")
        .add("--device", selector, "I|NAME", "the device to mark as chosen, by index or part of its name");
    if (!parser.parse(args)) return 0;
    gpu::Instance instance;
    gpu::DeviceChoice choice = gpu::choose_device(instance, selector);
    if (json) {
        nlohmann::json out = {{"chosen", choice.chosen}, {"devices", nlohmann::json::array()}};
        for (const auto& caps : choice.devices) out["devices"].push_back(to_json(caps));
        std::printf("%s\n", out.dump(2).c_str());
    } else {
        print_table(choice);
    }
    return 0;
}

}  // namespace vkllm::cli
