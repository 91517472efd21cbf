#include "op_harness.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <string>

#include <fmt/format.h>

#include "gpu/device.h"
#include "gpu/transfer.h"
#include "ops/coopmat.h"

namespace vkllm::test {

gpu::Buffer zero_buffer(uint64_t bytes) {
    gpu::Buffer buffer = device().allocator().create(std::max<uint64_t>(bytes, 4), gpu::MemoryDomain::Device);
    gpu::Commands commands(device());
    for (const gpu::BufferRange& segment : buffer.segments()) commands.fill(segment, 0);
    commands.submit_and_wait();
    return buffer;
}

gpu::Buffer upload_bytes(std::span<const std::byte> bytes) {
    gpu::Buffer buffer = zero_buffer(bytes.size());
    transfer().upload(buffer, 0, bytes);
    transfer().flush();
    return buffer;
}

OpGraph::OpGraph(gpu::Device& device) : graph_(device) {}

graph::Region OpGraph::operator()(const gpu::BufferRange& range) {
    // Named by the memory, so that declaring it again gives the same region.
    return graph_.persistent(fmt::format("{}+{}:{}", static_cast<void*>(range.buffer), range.offset, range.size),
                             range);
}

ops::WeightMatrix OpGraph::weights(gguf::GgmlType type, uint32_t rows, uint32_t cols, const gpu::Buffer& buffer) {
    return ops::weight_matrix(graph_, fmt::format("weights@{}", static_cast<const void*>(&buffer)), type, rows, cols,
                              buffer);
}

graph::BakedGraph OpGraph::bake(std::span<const graph::Dispatch> dispatches) {
    for (size_t i = 0; i < dispatches.size(); ++i) graph_.add(fmt::format("pass{}", i), dispatches[i]);
    return std::move(graph_).bake();
}

std::vector<int32_t> random_ints(size_t count, uint64_t seed, int32_t low, int32_t high) {
    std::mt19937_64 engine(seed);
    std::vector<int32_t> values(count);
    for (int32_t& value : values) value = low + int32_t(engine() % uint64_t(int64_t(high) - low + 1));
    return values;
}

void check_close(std::span<const float> got, std::span<const float> want, double tolerance, uint64_t seed,
                 const char* what) {
    const double error = relative_error(got, want);
    INFO(std::string(what), ": seed ", seed, ", relative error ", error, ", tolerance ", tolerance);
    CHECK(error <= tolerance);
}

std::optional<ops::CoopmatShape> coopmat_under_test() {
    const gpu::Capabilities& caps = device().caps();
    if (std::optional<ops::CoopmatShape> shape = ops::coopmat_shape(caps)) return shape;
    if (caps.cooperative_matrix) {
        MESSAGE("the device's cooperative-matrix kernels are off (VKLLM_COOPMAT=0): the default run tests them");
        return std::nullopt;
    }
    if (!caps.use_float16()) {
        MESSAGE("no fp16 arithmetic: the emulated cooperative-matrix kernels need it");
        return std::nullopt;
    }
    return ops::CoopmatShape{.m = 8, .n = 8, .k = 8, .subgroup_size = caps.subgroup_size, .emulated = true};
}

}  // namespace vkllm::test
