#pragma once
// What the op tests share: device buffers from host values, running dispatches, and the
// GPU-versus-reference check (relative error, NaN fails, the seed printed on failure).
#include <cstdint>
#include <span>
#include <vector>

#include "gpu/dispatch.h"
#include "gpu/memory.h"
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

// Records the dispatches in order (a full barrier between each two), submits and waits.
void run(std::span<const gpu::Dispatch> dispatches);
inline void run(const gpu::Dispatch& dispatch) { run(std::span(&dispatch, 1)); }

std::vector<int32_t> random_ints(size_t count, uint64_t seed, int32_t low, int32_t high);

// CHECKs ||got - want|| / ||want|| <= tolerance (false on NaN or inf), naming the seed and the case.
void check_close(std::span<const float> got, std::span<const float> want, double tolerance, uint64_t seed,
                 const char* what);

}  // namespace vkllm::test
