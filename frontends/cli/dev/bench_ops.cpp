// vkllm bench-ops [--rows N] [--cols N] [--repeat N] [--type T] [--sweep] [--fastest] [--only SECTION]:
// GB/s of each matvec kernel on a rows x cols weight (4096 x 4096 by default, then the device's own launch
// on 16384 x 8192, a weight larger than a GPU's L2 cache, whose reads must come from memory), next to the
// streaming ceiling of the same device measured here: a plain read kernel (shaders/bench_read.comp) through storage buffers
// and through texel buffers (each matvec is put next to the one of its read path), and vkCmdCopyBuffer.
// Then the device's matvec of each type on 2, 4 and 8 vectors at once (matvec_batch, a server's decode
// step) next to matmul on as many, in time per batch against one vector's; the arithmetic ceiling (an
// FMA-bound kernel, f32 and f16 where the device has fp16 arithmetic, and its int8 dot-product form
// where the device has VK_KHR_shader_integer_dot_product) with each type's matmul on 64 tokens as a
// fraction of its variant's; then decode attention with the 1B llama's heads over a few cache fills,
// in GB/s of the cache read.
#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "../commands.h"
#include "../op_timing.h"
#include "../options.h"
#include "core/error.h"
#include "gguf/quants.h"
#include "gpu/device.h"
#include "gpu/dispatch.h"
#include "gpu/memory.h"
#include "gpu/pipeline.h"
#include "gpu/timing.h"
#include "gpu/transfer.h"
#include "graph/baked.h"
#include "ops/attention.h"
#include "ops/matmul.h"
#include "ops/matvec.h"
#include "params.h"

namespace vkllm::cli {
namespace {

struct Settings {
    uint32_t rows = 4096, cols = 4096, repeat = 20;
    bool large_shape = true;  // 16384 x 8192 after rows x cols (neither --rows nor --cols given)
    bool sweep = false;     // every launch shape, not only the device's default
    bool fastest = false;   // the fastest run rather than the median (on a machine shared with other work)
    std::string type;       // only this weight type ("q4_K"); empty: all
    std::string only;       // only this section ("matvec", "arithmetic", "attention"); empty: all
};

// Settings from the command line, or nothing when --help was asked.
std::optional<Settings> parse_settings(Args args) {
    Settings settings;
    Options parser("bench-ops", "[--rows N] [--cols N] [--repeat N] [--type T] [--sweep] [--fastest] [--only SECTION]",
                   "GB/s of each matvec kernel on a rows x cols weight, next to the device's streaming ceiling "
                   "(a plain read kernel through storage and texel buffers, and vkCmdCopyBuffer), and on 2-8 "
                   "vectors beside matmul; the FMA ceiling and each matmul's fraction of it; decode attention.");
    parser.add("--rows", settings.rows, "N", "weight rows (without --rows and --cols: then 16384 x 8192 too)")
        .add("--cols", settings.cols, "N", "weight columns")
        .add("--repeat", settings.repeat, "N", "timed runs; the median is reported")
        .add("--type", settings.type, "T", "only this weight type (q4_K, q8_0...); all when not given")
        .flag("--sweep", settings.sweep, "every launch shape, not only the device's default")
        .flag("--fastest", settings.fastest, "report the fastest run instead of the median (a shared machine)")
        .add("--only", settings.only, "SECTION", "only matvec, arithmetic or attention; all when not given");
    if (!parser.parse(args)) return std::nullopt;
    settings.large_shape = !parser.given("--rows") && !parser.given("--cols");
    for (auto [name, value] : {std::pair{"--rows", settings.rows}, {"--cols", settings.cols}, {"--repeat", settings.repeat}})
        if (value == 0) fail("{} must be at least 1", name);
    if (!settings.only.empty() && settings.only != "matvec" && settings.only != "arithmetic" && settings.only != "attention")
        fail("--only {}: expected matvec, arithmetic or attention", settings.only);
    return settings;
}

// Median (or with --fastest, least) milliseconds of `repeat` runs of the recorded work, each its own
// timestamp region, after one untimed run that touches every page.
double run_ms(gpu::Device& device, Timing timing, const auto& record) {
    const uint32_t repeat = timing.repeat;
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
    return pick(std::move(ms), timing);
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
Ceiling streaming_ceiling(gpu::Device& device, uint64_t bytes, Timing timing) {
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
        return run_ms(device, timing, [&](gpu::Commands& c) { c.record(dispatch); });
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
    double copy_ms = run_ms(device, timing, [&](gpu::Commands& c) { c.copy(source.range(), target.range()); });
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
    for (uint32_t workgroup : {8u, 32u, 64u, 128u, 256u})
        for (uint32_t team : {1u, subgroup, 2 * subgroup, 4 * subgroup, 8 * subgroup})
            for (uint32_t rows : {1u, 2u, 4u, 8u})
                if (workgroup % team == 0 && (team == 1 || team % subgroup == 0) &&
                    workgroup <= caps.max_workgroup_invocations)
                    shapes.push_back({workgroup, team, rows, chosen.float16, chosen.texel_reads});
    return shapes;
}

std::string describe(const ops::MatvecConfig& config) {
    return fmt::format("wg {:>3} team {:>3} rows {}", config.workgroup_size, config.threads_per_row,
                       config.rows_per_team);
}

// Decode attention of one query at position keys - 1 in a cache of n_cells f16 cells, with the 1B
// llama's heads (32 of 64 dims over 8 KV heads): median ms and the GB/s of the K and V rows it reads.
void bench_attention(gpu::Device& device, uint32_t keys, uint32_t n_cells, Timing timing) {
    const ops::AttentionConfig config{.n_head = 32, .n_head_kv = 8, .head_dim_k = 64, .head_dim_v = 64, .scale = 0.125f};
    const ops::AttentionShape shape{.n_tokens = 1, .n_cells = n_cells, .kv_type = ops::KvType::F16};
    const uint32_t row = config.n_head_kv * config.head_dim_k;
    gpu::Allocator& allocator = device.allocator();
    gpu::Buffer q = allocator.create(config.n_head * config.head_dim_k * 4, gpu::MemoryDomain::Device);
    gpu::Buffer k = allocator.create(ops::kv_cache_bytes(shape.kv_type, n_cells, row), gpu::MemoryDomain::Device);
    gpu::Buffer v = allocator.create(ops::kv_cache_bytes(shape.kv_type, n_cells, row), gpu::MemoryDomain::Device);
    gpu::Buffer out = allocator.create(config.n_head * config.head_dim_v * 4, gpu::MemoryDomain::Device);
    gpu::Buffer scratch = allocator.create(ops::attention_decode_scratch_bytes(config, shape), gpu::MemoryDomain::Device);
    gpu::Buffer positions = allocator.create(4, gpu::MemoryDomain::DeviceMapped);
    const int32_t position = int32_t(keys) - 1;
    positions.write(0, std::as_bytes(std::span(&position, 1)));
    gpu::Commands fill(device);
    fill.fill(q.range(), 0x3c000000u).fill(k.range(), 0x3c003c00u).fill(v.range(), 0x3c003c00u);
    fill.submit_and_wait();
    const double ms = op_ms(device, timing, [&](graph::Graph& g) {
        return ops::attention_decode(
            device, config, shape,
            {g.persistent("q", q.range()), g.persistent("k", k.range()), g.persistent("v", v.range()),
             g.persistent("positions", positions.range()), g.persistent("out", out.range()),
             g.persistent("scratch", scratch.range())});
    });
    const uint64_t bytes = 2 * ops::kv_cache_bytes(shape.kv_type, keys, row);
    std::printf("  %-18s %6u keys of %6u cells %9.2f %9.3f %9.2f\n", "attn_decode_f16", keys, n_cells,
                double(bytes) / (1 << 20), ms, gb_per_s(bytes, ms));
}

// Giga-operations per second of a variant of the arithmetic-bound kernel (bench_fma_f32, bench_fma_f16,
// bench_dot_i8): workgroups of 256 invocations (fewer where the device allows fewer), each running 256
// iterations of 32 chain steps, a step being 8 operations (a vec4 FMA: 4 multiplies and 4 adds; a packed
// 4x8-bit dot product accumulated: the same). The grid doubles until one run lasts ceiling_run_ms, so
// that every compute unit holds as many workgroups as it can take and the launch is a small part of the
// run; then runs of that grid go on for ceiling_warm_up_ms before the timed ones, as a GPU that idles at
// a low clock takes that long to raise it (the H200's first runs of 1 ms each gave 10.6 TFLOP/s of its
// ~67).
constexpr double ceiling_run_ms = 10, ceiling_warm_up_ms = 200;

double ceiling_gops(gpu::Device& device, const char* kernel, Timing timing) {
    const gpu::Capabilities& caps = device.caps();
    const uint32_t local = std::min({256u, caps.max_workgroup_invocations, caps.max_workgroup_size[0]});
    const uint32_t iterations = 256, steps_per_iteration = 32;
    const uint32_t most_groups = std::min(caps.max_workgroup_count[0], 1u << 16);
    const gpu::Pipeline& pipeline = device.pipelines().get(kernel, {{0, local}});
    auto run_groups = [&](uint32_t groups, Timing runs) {
        gpu::Buffer sums = device.allocator().create(uint64_t(groups) * local * 4, gpu::MemoryDomain::Device);
        gpu::Dispatch dispatch{.pipeline = &pipeline};
        dispatch.bindings = {{sums.range(), gpu::Access::Write}};
        dispatch.params(params::BenchFmaParams{iterations, 0.999f, 0.001f});
        dispatch.groups = {groups, 1, 1};
        return run_ms(device, runs, [&](gpu::Commands& c) { c.record(dispatch); });
    };
    uint32_t groups = 64;
    while (2 * groups <= most_groups && run_groups(groups, {1, true}) < ceiling_run_ms) groups *= 2;
    double warm = 0;
    for (uint32_t run = 0; run < 1000 && warm < ceiling_warm_up_ms; ++run) warm += run_groups(groups, {1, true});
    const double ms = run_groups(groups, timing);
    return 8.0 * groups * local * iterations * steps_per_iteration / (ms * 1e6);
}

// Each type's matmul on 64 tokens (the device's launch) as a fraction of the arithmetic ceiling of
// its variant (f16 or f32).
void bench_arithmetic(gpu::Device& device, const Settings& options) {
    const gpu::Capabilities& caps = device.caps();
    const Timing timing{options.repeat, options.fastest};
    const double f32 = ceiling_gops(device, "bench_fma_f32", timing);
    const double f16 = caps.use_float16() ? ceiling_gops(device, "bench_fma_f16", timing) : 0;
    std::printf("arithmetic ceiling: f32 FMA %.1f GFLOP/s", f32);
    if (f16 > 0) std::printf(", f16 FMA %.1f GFLOP/s", f16);
    const double int8 = caps.integer_dot_product ? ceiling_gops(device, "bench_dot_i8", timing) : 0;
    if (int8 > 0)  // the ceiling of the int8-activation matmuls
        std::printf(", int8 dot %.1f GOPS%s", int8, caps.integer_dot_product_accelerated ? "" : " (not accelerated)");
    std::printf("\nmatmul %u x %u on 64 tokens, %s of %u runs:\n", options.rows, options.cols,
                options.fastest ? "fastest" : "median", options.repeat);
    std::printf("  %-24s %9s %9s %8s\n", "pipeline", "ms", "GFLOP/s", "of FMA");
    const uint32_t n_tokens = 64;
    gpu::Buffer x = device.allocator().create(uint64_t(n_tokens) * options.cols * 4, gpu::MemoryDomain::Device);
    gpu::Buffer y = device.allocator().create(uint64_t(n_tokens) * options.rows * 4, gpu::MemoryDomain::Device);
    gpu::Commands fill(device);
    fill.fill(x.range(), 0x3f000000u).fill(y.range(), 0);
    fill.submit_and_wait();
    for (const gguf::TypeTraits& traits : gguf::type_table) {
        if (!gguf::runs_on_vkllm(traits.type) || (!options.type.empty() && traits.name != options.type)) continue;
        ops::check_weight_shape(traits.type, options.rows, options.cols, "bench-ops");
        gpu::Buffer weights = make_weights(device, traits.type, options);
        const ops::MatmulConfig config = ops::matmul_config(caps, traits.type);
        const double ms = op_ms(device, timing, [&](graph::Graph& g) {
            return ops::matmul(device,
                               ops::weight_matrix(g, "weights", traits.type, options.rows, options.cols, weights),
                               g.persistent("x", x.range()), g.persistent("y", y.range()), n_tokens, false);
        });
        const double gflops = 2.0 * options.rows * options.cols * n_tokens / (ms * 1e6);
        std::printf("  %-24s %9.3f %9.1f %7.0f%%\n", ops::matmul_pipeline_name(traits.type, config).c_str(), ms, gflops,
                    100.0 * gflops / (config.float16 ? f16 : f32));
        // Where the type has an int8-activation kernel: x's quantization and the product, against the
        // int8 dot ceiling (whether or not the device's own launch takes it).
        if (int8 == 0 || (traits.type != gguf::GgmlType::Q4_0 && traits.type != gguf::GgmlType::Q8_0)) continue;
        gpu::Buffer x_int8 =
            device.allocator().create(ops::int8_activation_bytes(n_tokens, options.cols), gpu::MemoryDomain::Device);
        const ops::MatmulConfig int8_config = ops::matmul_config(caps, traits.type, true);
        const double int8_ms = op_ms(device, timing, [&](graph::Graph& g) {
            return ops::matmul_int8(device,
                                    ops::weight_matrix(g, "weights", traits.type, options.rows, options.cols, weights),
                                    g.persistent("x", x.range()), g.persistent("x_int8", x_int8.range()),
                                    g.persistent("y", y.range()), n_tokens, false, int8_config);
        });
        const double gops = 2.0 * options.rows * options.cols * n_tokens / (int8_ms * 1e6);
        std::printf("  %-24s %9.3f %9.1f %7.0f%% of int8 dot (quantize_q8 included)\n",
                    ops::matmul_pipeline_name(traits.type, int8_config).c_str(), int8_ms, gops, 100.0 * gops / int8);
    }
}

// Every type's matvec on options.rows x options.cols: with `all_rows`, each launch shape and the 2-8 vector
// batches beside matmul; else the device's launch alone.
void bench_matvecs(gpu::Device& device, const Settings& options, bool all_rows) {
    const gpu::Capabilities& caps = device.caps();
    const uint64_t stream_bytes = uint64_t(options.rows) * options.cols * 4;
    const Ceiling ceiling = streaming_ceiling(
        device, std::min<uint64_t>(stream_bytes, device.allocator().max_binding_range()), {options.repeat, options.fastest});
    std::printf("streaming ceiling: read kernel through storage buffers %.2f GB/s (interleaved %.2f, contiguous "
                "%.2f), through texel buffers %.2f GB/s (%.2f, %.2f); vkCmdCopyBuffer %.2f GB/s (read + write)\n",
                ceiling.storage.best(), ceiling.storage.interleaved, ceiling.storage.contiguous, ceiling.texel.best(),
                ceiling.texel.interleaved, ceiling.texel.contiguous, ceiling.copy);
    std::printf("matvec %u x %u, %s of %u runs:\n", options.rows, options.cols, options.fastest ? "fastest" : "median",
                options.repeat);
    std::printf("  %-18s %-24s %9s %9s %9s %8s\n", "pipeline", "launch", "MiB", "ms", "GB/s", "of read");

    const uint64_t vectors = ops::matvec_max_tokens;
    gpu::Buffer x_buffer = device.allocator().create(vectors * options.cols * 4, gpu::MemoryDomain::Device);
    gpu::Buffer y_buffer = device.allocator().create(vectors * options.rows * 4, gpu::MemoryDomain::Device);
    gpu::Commands fill(device);
    fill.fill(x_buffer.range(), 0x3f000000u).fill(y_buffer.range(), 0);
    fill.submit_and_wait();
    // describe(weights, x, y) gives the op's dispatches on the benchmark's buffers.
    auto time = [&](const gpu::Buffer& weights, gguf::GgmlType type, const auto& describe) {
        return op_ms(device, {options.repeat, options.fastest}, [&](graph::Graph& g) {
            return describe(ops::weight_matrix(g, "weights", type, options.rows, options.cols, weights),
                            g.persistent("x", x_buffer.range()), g.persistent("y", y_buffer.range()));
        });
    };
    for (const gguf::TypeTraits& traits : gguf::type_table) {
        if (!gguf::runs_on_vkllm(traits.type) || (!options.type.empty() && traits.name != options.type)) continue;
        ops::check_weight_shape(traits.type, options.rows, options.cols, "bench-ops");
        gpu::Buffer weights = make_weights(device, traits.type, options);
        const double mib = double(weights.size()) / (1 << 20);
        double one_ms = 0;  // the device's launch on one vector
        std::vector<ops::MatvecConfig> shapes = launch_shapes(caps, traits.type, options);
        if (!all_rows) shapes.resize(1);
        for (const ops::MatvecConfig& config : shapes) {
            const double ms =
                time(weights, traits.type, [&](const ops::WeightMatrix& matrix, graph::Region x, graph::Region y) {
                    return ops::matvec(device, matrix, x, y, false, config);
                });
            if (one_ms == 0) one_ms = ms;
            const double gbs = gb_per_s(weights.size(), ms);
            std::printf("  %-18s %-24s %9.2f %9.3f %9.2f %7.0f%%\n",
                        ops::matvec_pipeline_name(traits.type, config).c_str(), describe(config).c_str(), mib, ms,
                        gbs, 100.0 * gbs / ceiling.read(config.texel_reads));
        }
        if (!all_rows) continue;
        const std::string name = ops::matvec_pipeline_name(traits.type, ops::matvec_config(caps, traits.type, options.cols));
        for (uint32_t n : {2u, 4u, ops::matvec_max_tokens}) {  // "x one" is the batch's time over one vector's
            const double batch_ms =
                time(weights, traits.type, [&](const ops::WeightMatrix& matrix, graph::Region x, graph::Region y) {
                    return ops::matvec_batch(device, matrix, x, y, n, false);
                });
            const double matmul_ms =
                time(weights, traits.type, [&](const ops::WeightMatrix& matrix, graph::Region x, graph::Region y) {
                    return ops::matmul(device, matrix, x, y, n, false);
                });
            std::printf("  %-18s %-24s %9.2f %9.3f %9.2f %6.2fx one; matmul %.3f ms\n", name.c_str(),
                        fmt::format("{} vectors", n).c_str(), mib, batch_ms, gb_per_s(weights.size(), batch_ms),
                        batch_ms / one_ms, matmul_ms);
        }
    }
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

    if (options.only.empty() || options.only == "matvec") {
        bench_matvecs(device, options, true);
        if (options.large_shape) {
            Settings large = options;
            large.rows = 16384;
            large.cols = 8192;
            bench_matvecs(device, large, false);
        }
    }
    if (options.only.empty() || options.only == "arithmetic") bench_arithmetic(device, options);
    if (options.only.empty() || options.only == "attention") {
        std::printf("decode attention, 1B llama heads, f16 cache, %s of %u runs:\n", options.fastest ? "fastest" : "median",
                    options.repeat);
        std::printf("  %-18s %-29s %9s %9s %9s\n", "pipeline", "context", "MiB", "ms", "GB/s");
        for (auto [keys, cells] : {std::pair{64u, 64u}, {4096u, 4096u}, {64u, 131072u}, {4096u, 131072u}})
            bench_attention(device, keys, cells, {options.repeat, options.fastest});
    }
    return 0;
}

}  // namespace vkllm::cli
