#pragma once
// What the op tests share: device buffers from host values, running an op's passes through a graph,
// and the GPU-versus-reference check (relative error, NaN fails, the seed printed on failure).
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "gpu/memory.h"
#include "ops/coopmat.h"
#include "graph/baked.h"
#include "gpu_fixture.h"
#include "weight_fixture.h"  // f32_tolerance, f16_tolerance, base_seed(), random weights

namespace vkllm::test {

// A device buffer of at least `bytes` (never empty), zero-filled.
gpu::Buffer zero_buffer(uint64_t bytes);
gpu::Buffer upload_bytes(std::span<const std::byte> bytes);
template <class T>
gpu::Buffer upload_values(std::span<const T> values) {
    return upload_bytes(std::as_bytes(values));
}
template <class T>
std::vector<T> download_values(const gpu::Buffer& buffer, size_t count) {
    std::vector<T> values(count);
    transfer().readback(buffer, std::span(values));
    return values;
}

// A graph for one run of an op, as production runs it: the test's buffers declared as persistent
// regions, the op's dispatches added as passes, baked and replayed once.
class OpGraph {
public:
    explicit OpGraph(gpu::Device& device = test::device());
    // The memory as a persistent region; the same memory gives the same region.
    graph::Region operator()(const gpu::BufferRange& range);
    graph::Region operator()(const gpu::Buffer& buffer) { return (*this)(buffer.range()); }
    ops::WeightMatrix weights(gguf::GgmlType type, uint32_t rows, uint32_t cols, const gpu::Buffer& buffer);
    // Adds the dispatches as passes in order and bakes them (to replay many times); the graph is spent.
    graph::BakedGraph bake(std::span<const graph::Dispatch> dispatches);
    // The same, replayed once (waits for the GPU).
    void run(std::span<const graph::Dispatch> dispatches) { bake(dispatches).replay(); }
    void run(const graph::Dispatch& dispatch) { run(std::span(&dispatch, 1)); }

private:
    graph::Graph graph_;
};

std::vector<int32_t> random_ints(size_t count, uint64_t seed, int32_t low, int32_t high);

// CHECKs ||got - want|| / ||want|| <= tolerance (false on NaN or inf), naming the seed and the case.
void check_close(std::span<const float> got, std::span<const float> want, double tolerance, uint64_t seed,
                 const char* what);

// The cooperative-matrix shape the kernel tests run (ops/coopmat.h): the device's own product where its
// kernels are on; on a device without cooperative matrices, 8 x 8 x 8 products of the emulated builds
// (plain arithmetic, slow on a GPU: they stand in for kernels the device cannot run). nullopt, said in
// a message, where the device has no fp16 arithmetic, or has matrix units with the kernels off
// (VKLLM_COOPMAT=0: the default run tests its real kernels).
std::optional<ops::CoopmatShape> coopmat_under_test();

}  // namespace vkllm::test
