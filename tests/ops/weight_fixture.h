#pragma once
// What the matvec and matmul tests share: random GGUF weights of every type vkllm runs (random floats
// quantized by the reference quantizer), their upload, one run of the op on the GPU, and the
// tolerance of each arithmetic.
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "gguf/types.h"
#include "gpu/device.h"
#include "gpu/memory.h"
#include "gpu/transfer.h"
#include "ops/matmul.h"
#include "ops/matvec.h"

namespace vkllm::test {

inline constexpr std::array<gguf::GgmlType, 11> weight_types = {
    gguf::GgmlType::F32,  gguf::GgmlType::F16,  gguf::GgmlType::BF16, gguf::GgmlType::Q4_0,
    gguf::GgmlType::Q4_1, gguf::GgmlType::Q5_0, gguf::GgmlType::Q5_1, gguf::GgmlType::Q8_0,
    gguf::GgmlType::Q4_K, gguf::GgmlType::Q5_K, gguf::GgmlType::Q6_K};

// ||gpu - ref|| / ||ref|| allowed for fp32 and fp16 arithmetic.
inline constexpr double f32_tolerance = 1e-5, f16_tolerance = 2e-3;

// The columns of the smallest legal row: one block, or 4 values of a dense type.
uint32_t column_granularity(gguf::GgmlType type);

// The base seed of the random inputs: VKLLM_TEST_SEED, else a fixed one. Printed once.
uint64_t base_seed();

struct HostWeights {
    gguf::GgmlType type;
    uint32_t rows, cols;
    std::vector<std::byte> blocks;
};
HostWeights random_weights(gguf::GgmlType type, uint32_t rows, uint32_t cols, uint64_t seed);

// A device buffer holding the blocks, split at row granularity where it exceeds one binding.
gpu::Buffer upload_weights(gpu::Device& device, gpu::Transfer& transfer, const HostWeights& weights);

// y0 updated by the op on the GPU: y = W x, or y0 + W x with accumulate; n_tokens vectors at once
// (ops::matvec_batch) past 1.
std::vector<float> gpu_matvec(gpu::Device& device, gpu::Transfer& transfer, const HostWeights& weights,
                              const gpu::Buffer& weight_buffer, std::span<const float> x, std::span<const float> y0,
                              bool accumulate, std::optional<ops::MatvecConfig> config = std::nullopt,
                              uint32_t n_tokens = 1);
std::vector<float> gpu_matmul(gpu::Device& device, gpu::Transfer& transfer, const HostWeights& weights,
                              const gpu::Buffer& weight_buffer, std::span<const float> x, std::span<const float> y0,
                              uint32_t n_tokens, bool accumulate,
                              std::optional<ops::MatmulConfig> config = std::nullopt);
// matmul with int8 activations: quantize_q8 of x, then the int8 kernel (config: the device's int8
// launch when absent). Returns y and the quantized activations.
struct Int8Matmul {
    std::vector<float> y;
    std::vector<uint32_t> x_int8;
};
Int8Matmul gpu_matmul_int8(gpu::Device& device, gpu::Transfer& transfer, const HostWeights& weights,
                           const gpu::Buffer& weight_buffer, std::span<const float> x, std::span<const float> y0,
                           uint32_t n_tokens, bool accumulate, std::optional<ops::MatmulConfig> config);

}  // namespace vkllm::test
