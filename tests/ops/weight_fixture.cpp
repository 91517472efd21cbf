#include "weight_fixture.h"

#include <cstdio>

#include "core/env.h"
#include "gguf/quants.h"
#include "gpu_fixture.h"
#include "op_harness.h"

namespace vkllm::test {

namespace {

gpu::Buffer upload_floats(gpu::Device& device, gpu::Transfer& transfer, std::span<const float> values) {
    gpu::Buffer buffer = device.allocator().create(values.size_bytes(), gpu::MemoryDomain::Device);
    transfer.upload(buffer, values);
    transfer.flush();
    return buffer;
}

std::vector<float> run(gpu::Device& device, gpu::Transfer& transfer, std::span<const float> x,
                       std::span<const float> y0, auto make_dispatches) {
    gpu::Buffer x_buffer = upload_floats(device, transfer, x), y_buffer = upload_floats(device, transfer, y0);
    OpGraph op_graph(device);
    op_graph.run(make_dispatches(op_graph, op_graph(x_buffer), op_graph(y_buffer)));
    std::vector<float> y(y0.size());
    transfer.readback(y_buffer, std::span(y));
    return y;
}

}  // namespace

uint32_t column_granularity(gguf::GgmlType type) {
    return gguf::block_size(type) == 1 ? 4 : gguf::block_size(type);
}

uint64_t base_seed() {
    static const uint64_t seed = [] {
        auto text = env::get("VKLLM_TEST_SEED");
        uint64_t value = text ? std::stoull(*text) : 20261122;
        std::printf("matvec/matmul tests: base seed %llu (set VKLLM_TEST_SEED to change it)\n",
                    (unsigned long long)value);
        return value;
    }();
    return seed;
}

HostWeights random_weights(gguf::GgmlType type, uint32_t rows, uint32_t cols, uint64_t seed) {
    std::vector<float> values = random_floats(size_t(rows) * cols, seed);
    return {type, rows, cols, gguf::quantize(type, values)};
}

gpu::Buffer upload_weights(gpu::Device& device, gpu::Transfer& transfer, const HostWeights& weights) {
    gpu::Buffer buffer = device.allocator().create(weights.blocks.size(), gpu::MemoryDomain::Device,
                                                   ops::weight_row_bytes(weights.type, weights.cols));
    transfer.upload(buffer, 0, std::span<const std::byte>(weights.blocks));
    transfer.flush();
    return buffer;
}

std::vector<float> gpu_matvec(gpu::Device& device, gpu::Transfer& transfer, const HostWeights& weights,
                              const gpu::Buffer& weight_buffer, std::span<const float> x, std::span<const float> y0,
                              bool accumulate, std::optional<ops::MatvecConfig> config, uint32_t n_tokens) {
    return run(device, transfer, x, y0, [&](OpGraph& g, graph::Region x_region, graph::Region y_region) {
        const ops::WeightMatrix matrix = g.weights(weights.type, weights.rows, weights.cols, weight_buffer);
        return n_tokens == 1 ? ops::matvec(device, matrix, x_region, y_region, accumulate, config)
                             : ops::matvec_batch(device, matrix, x_region, y_region, n_tokens, accumulate, config);
    });
}

std::vector<float> gpu_matmul(gpu::Device& device, gpu::Transfer& transfer, const HostWeights& weights,
                              const gpu::Buffer& weight_buffer, std::span<const float> x, std::span<const float> y0,
                              uint32_t n_tokens, bool accumulate, std::optional<ops::MatmulConfig> config) {
    return run(device, transfer, x, y0, [&](OpGraph& g, graph::Region x_region, graph::Region y_region) {
        const ops::WeightMatrix matrix = g.weights(weights.type, weights.rows, weights.cols, weight_buffer);
        return ops::matmul(device, matrix, x_region, y_region, n_tokens, accumulate, config);
    });
}

Int8Matmul gpu_matmul_int8(gpu::Device& device, gpu::Transfer& transfer, const HostWeights& weights,
                           const gpu::Buffer& weight_buffer, std::span<const float> x, std::span<const float> y0,
                           uint32_t n_tokens, bool accumulate, std::optional<ops::MatmulConfig> config) {
    const uint64_t int8_bytes = ops::int8_activation_bytes(n_tokens, weights.cols);
    gpu::Buffer int8_buffer = device.allocator().create(int8_bytes, gpu::MemoryDomain::Device);
    Int8Matmul result;
    result.y = run(device, transfer, x, y0, [&](OpGraph& g, graph::Region x_region, graph::Region y_region) {
        const ops::WeightMatrix matrix = g.weights(weights.type, weights.rows, weights.cols, weight_buffer);
        return ops::matmul_int8(device, matrix, x_region, g(int8_buffer), y_region, n_tokens, accumulate, config);
    });
    result.x_int8.resize(int8_bytes / 4);
    transfer.readback(int8_buffer, std::span(result.x_int8));
    return result;
}

}  // namespace vkllm::test
