// vkllm bench-ops [--rows N] [--cols N] [--repeat N] [--type T] [--sweep]: GB/s of each matvec kernel on a
// rows x cols weight (4096 x 4096 by default), next to the streaming ceiling of the same device
// measured here: a plain read kernel (shaders/bench_read.comp) through storage buffers and through
// texel buffers (each matvec is put next to the one of its read path), and vkCmdCopyBuffer.
#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "commands.h"
#include "core/error.h"
#include "gguf/quants.h"
#include "gpu/device.h"
#include "gpu/dispatch.h"
#include "gpu/memory.h"
#include "gpu/pipeline.h"
#include "gpu/timing.h"
#include "gpu/transfer.h"
#include "ops/matvec.h"
#include "options.h"
#include "params.h"

namespace vkllm::cli {
namespace {

struct Settings {
    uint32_t rows = 4096, cols = 4096, repeat = 20;
    bool sweep = false;     // every launch shape, not only the device's default
    std::string type;       // only this weight type ("q4_K"); empty: all
};

// Settings from the command line, or nothing when --help was asked.
std::optional<Settings> parse_settings(Args args) {
    Settings settings;
    Options parser("bench-ops", "[--rows N] [--cols N] [--repeat N] [--type T] [--sweep]",
                   "GB/s of each matvec kernel on a rows x cols weight, next to the device's streaming ceiling "
                   "(a plain read kernel through storage and texel buffers, and vkCmdCopyBuffer).");
    parser.add("--rows", settings.rows, "N", "weight rows")
        .add("--cols", settings.cols, "N", "weight columns")
        .add("--repeat", settings.repeat, "N", "timed runs; the median is reported")
        .add("--type", settings.type, "T", "only this weight type (q4_K, q8_0...); all when not given")
        .flag("--sweep", settings.sweep, "every launch shape, not only the device's default");
    if (!parser.parse(args)) return std::nullopt;
    for (auto [name, value] : {std::pair{"--rows", settings.rows}, {"--cols", settings.cols}, {"--repeat", settings.repeat}})
        if (value == 0) fail("{} must be at least 1", name);
    return settings;
}

// Median milliseconds of `repeat` runs of the recorded work, each its own timestamp region, after
// one untimed run that touches every page.
double median_ms(gpu::Device& device, uint32_t repeat, const auto& record) {
    gpu::Commands warm_up(device);
    record(warm_up);
    warm_up.submit_and_wait();

    gpu::Timestamps timestamps(device, repeat);
    gpu::Commands commands(device);
    timestamps.reset(commands.handle());
    for (uint32_t i = 0; i < repeat; ++i) {
        timestamps.begin(commands.handle(), "run");
        record(commands);
        timestamps.end(commands.handle());
    }
    commands.submit_and_wait();
    std::vector<double> ms;
    for (const auto& region : timestamps.read()) ms.push_back(region.milliseconds);
    std::nth_element(ms.begin(), ms.begin() + ms.size() / 2, ms.end());
    return ms[ms.size() / 2];
}

double gb_per_s(uint64_t bytes, double ms) { return double(bytes) / (ms * 1e6); }

// Read kernel GB/s in its two access patterns, through one read path.
struct ReadRate {
    double interleaved = 0, contiguous = 0;
    double best() const { return std::max(interleaved, contiguous); }
};

struct Ceiling {
    ReadRate storage, texel;  // the read kernel through storage and through texel buffers
    double copy;              // vkCmdCopyBuffer GB/s, reads + writes
    double read(bool texel_reads) const { return texel_reads ? texel.best() : storage.best(); }
};

// The streaming ceiling over `bytes`: the read kernel (16 uvec4s per invocation, both patterns,
// both read paths) and vkCmdCopyBuffer.
Ceiling streaming_ceiling(gpu::Device& device, uint64_t bytes, uint32_t repeat) {
    gpu::Buffer source = device.allocator().create(bytes, gpu::MemoryDomain::Device);
    gpu::Buffer target = device.allocator().create(bytes, gpu::MemoryDomain::Device);
    const uint32_t count = uint32_t(bytes / 16), per_invocation = 16;
    auto read_ms = [&](bool contiguous, bool texel) {
        const gpu::Pipeline& read = device.pipelines().get(texel ? "bench_read_texel" : "bench_read", {{0, 64}});
        gpu::Dispatch dispatch{.pipeline = &read};
        dispatch.bindings = {{source.range(), gpu::Access::Read}, {target.range(), gpu::Access::Write}};
        dispatch.params(params::BenchReadParams{count, per_invocation, contiguous});
        dispatch.groups = {read.groups_x((count + per_invocation - 1) / per_invocation), 1, 1};
        if (dispatch.groups[0] > device.caps().max_workgroup_count[0]) fail("bench-ops: the weight is too large");
        return median_ms(device, repeat, [&](gpu::Commands& c) { c.record(dispatch); });
    };

    gpu::Commands fill(device);
    fill.fill(source.range(), 0x3c003c00u).fill(target.range(), 0);
    fill.submit_and_wait();
    Ceiling ceiling;
    for (bool texel : {false, true}) {
        ReadRate& rate = texel ? ceiling.texel : ceiling.storage;
        rate.interleaved = gb_per_s(bytes, read_ms(false, texel));
        rate.contiguous = gb_per_s(bytes, read_ms(true, texel));
    }
    double copy_ms = median_ms(device, repeat, [&](gpu::Commands& c) { c.copy(source.range(), target.range()); });
    ceiling.copy = gb_per_s(2 * bytes, copy_ms);
    return ceiling;
}

// A rows x cols weight of `type`: one quantized row of random values repeated (the kernels' speed
// does not depend on the values, and quantizing 16M values per type would dominate the run).
gpu::Buffer make_weights(gpu::Device& device, gguf::GgmlType type, const Settings& options) {
    std::vector<float> values(options.cols);
    uint32_t state = 12345;
    for (float& value : values) {
        state = state * 1664525u + 1013904223u;
        value = float(state >> 8) / float(1u << 24) * 2.0f - 1.0f;
    }
    std::vector<std::byte> row = gguf::quantize(type, values);
    std::vector<std::byte> blocks;
    blocks.reserve(row.size() * options.rows);
    for (uint32_t r = 0; r < options.rows; ++r) blocks.insert(blocks.end(), row.begin(), row.end());
    gpu::Buffer buffer = device.allocator().create(blocks.size(), gpu::MemoryDomain::Device, row.size());
    gpu::Transfer transfer(device);
    transfer.upload(buffer, 0, std::span<const std::byte>(blocks));
    transfer.flush();
    return buffer;
}

// The device's launch shape, its other arithmetic variant and its other read path; with --sweep,
// every shape too.
std::vector<ops::MatvecConfig> launch_shapes(const gpu::Capabilities& caps, gguf::GgmlType type,
                                             const Settings& options) {
    ops::MatvecConfig chosen = ops::matvec_config(caps, type, options.cols);
    std::vector<ops::MatvecConfig> shapes = {chosen};
    if (caps.use_float16() && ops::has_f16_variant(type)) {  // the variant the device does not prefer
        shapes.push_back(chosen);
        shapes.back().float16 = !chosen.float16;
    }
    shapes.push_back(chosen);
    shapes.back().texel_reads = !chosen.texel_reads;
    if (!options.sweep) return shapes;
    const uint32_t subgroup = std::max(caps.max_subgroup_size, caps.subgroup_size);
    for (uint32_t workgroup : {8u, 32u, 64u, 128u})
        for (uint32_t team : {1u, subgroup, 4 * subgroup, 32u})
            for (uint32_t rows : {1u, 2u, 4u})
                if (workgroup % team == 0 && (team == 1 || team % subgroup == 0))
                    shapes.push_back({workgroup, team, rows, chosen.float16, chosen.texel_reads});
    return shapes;
}

std::string describe(const ops::MatvecConfig& config) {
    return fmt::format("wg {:>3} team {:>3} rows {}", config.workgroup_size, config.threads_per_row,
                       config.rows_per_team);
}

}  // namespace

int bench_ops(Args args) {
    const std::optional<Settings> parsed = parse_settings(args);
    if (!parsed) return 0;
    const Settings& options = *parsed;
    gpu::Instance instance;
    gpu::Device device(instance);
    const gpu::Capabilities& caps = device.caps();
    std::printf("device: %s (%s)\n", caps.name.c_str(), caps.type_name().c_str());

    const uint64_t stream_bytes = uint64_t(options.rows) * options.cols * 4;
    const Ceiling ceiling = streaming_ceiling(
        device, std::min<uint64_t>(stream_bytes, device.allocator().max_binding_range()), options.repeat);
    std::printf("streaming ceiling: read kernel through storage buffers %.2f GB/s (interleaved %.2f, contiguous "
                "%.2f), through texel buffers %.2f GB/s (%.2f, %.2f); vkCmdCopyBuffer %.2f GB/s (read + write)\n",
                ceiling.storage.best(), ceiling.storage.interleaved, ceiling.storage.contiguous, ceiling.texel.best(),
                ceiling.texel.interleaved, ceiling.texel.contiguous, ceiling.copy);
    std::printf("matvec %u x %u, median of %u runs:\n", options.rows, options.cols, options.repeat);
    std::printf("  %-18s %-24s %9s %9s %9s %8s\n", "pipeline", "launch", "MiB", "ms", "GB/s", "of read");

    std::vector<float> x(options.cols, 0.5f), y(options.rows, 0.0f);
    gpu::Buffer x_buffer = device.allocator().create(x.size() * 4, gpu::MemoryDomain::Device);
    gpu::Buffer y_buffer = device.allocator().create(y.size() * 4, gpu::MemoryDomain::Device);
    for (const gguf::TypeTraits& traits : gguf::type_table) {
        if (!traits.runs_on_vkllm || (!options.type.empty() && traits.name != options.type)) continue;
        ops::check_weight_shape(traits.type, options.rows, options.cols, "bench-ops");
        gpu::Buffer weights = make_weights(device, traits.type, options);
        const ops::WeightMatrix matrix{traits.type, options.rows, options.cols, &weights};
        for (const ops::MatvecConfig& config : launch_shapes(caps, traits.type, options)) {
            std::vector<gpu::Dispatch> dispatches =
                ops::matvec(device, matrix, x_buffer.range(), y_buffer.range(), false, config);
            double ms = median_ms(device, options.repeat, [&](gpu::Commands& c) {
                for (const gpu::Dispatch& dispatch : dispatches) c.record(dispatch);
            });
            const double gbs = gb_per_s(weights.size(), ms);
            std::printf("  %-18s %-24s %9.2f %9.3f %9.2f %7.0f%%\n",
                        ops::matvec_pipeline_name(traits.type, config).c_str(), describe(config).c_str(),
                        double(weights.size()) / (1 << 20), ms, gbs, 100.0 * gbs / ceiling.read(config.texel_reads));
        }
    }
    return 0;
}

}  // namespace vkllm::cli
