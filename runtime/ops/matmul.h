#pragma once
// Matrix-matrix products for prefill: Y = W X, or Y += W X with the residual add fused in, for
// n_tokens token vectors at once (x [n_tokens][cols], y [n_tokens][rows], as ggml_mul_mat). W stays
// in its GGUF blocks (the types of matvec.h), decoded into shared-memory tiles by the kernel
// (shaders/matmul_<type>.comp).
//
// Devices that run integer dot products accelerated (RDNA's v_dot4, NVIDIA's dp4a) multiply Q4_0 and
// Q8_0 weights by activations quantized to int8 blocks instead, as llama.cpp's MMQ kernels do:
// quantize_q8 turns x into blocks of 32 int8 values and an f32 scale, and matmul with
// int8_activations sums each block's products exactly in integers (shaders/matmul_q8.comp). The
// result differs from the float kernels by the activations' rounding, half a step of max |x| / 127 per
// value; llama.cpp's CPU backend rounds its activations the same way for these types.
//
// Where the device's cooperative-matrix kernels are on (ops/coopmat.h), every weight type takes
// shaders/matmul_coopmat.comp instead: each unit of weights decoded into shared memory as f16 beside
// the tokens' x as f16, multiplied on the matrix units into f32 sums.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ops/coopmat.h"
#include "ops/matvec.h"

namespace vkllm::ops {

// Tile of Y one workgroup computes; each invocation computes 4 x 4 of it, so the workgroup has
// (tile_rows / 4) * (tile_tokens / 4) invocations. With coopmat, subgroups_rows x subgroups_tokens
// subgroups each compute a block of tile_rows / subgroups_rows x tile_tokens / subgroups_tokens,
// products of the coopmat shape.
struct MatmulConfig {
    uint32_t tile_rows = 64;
    uint32_t tile_tokens = 64;
    bool float16 = false;  // fp16 tiles and products, f32 accumulation (where the type has a variant)
    bool texel_reads = false;  // weights through texel buffers (gpu::Capabilities::texel_reads)
    bool int8_activations = false;  // x is quantize_q8's blocks (Q4_0 and Q8_0 weights)
    std::optional<CoopmatShape> coopmat;  // the cooperative-matrix kernel
    uint32_t subgroups_rows = 2, subgroups_tokens = 2;
};

// Whether Q4_0 or Q8_0 weights on this device take int8 activations: where its integer dot products
// are accelerated (lavapipe's are not: 44% of its f32 FMA rate), it reads storage buffers
// (gpu::Capabilities::int8_matmul) and its matrix units do not take the product instead.
bool int8_activations_pay(const gpu::Capabilities& caps, gguf::GgmlType type);
// Invocations of a config's workgroup: tile_rows / 8 for the texel-read kernel (8 rows a lane, all
// the tile's tokens), (tile_rows / 4) * (tile_tokens / 4) for the shared-memory ones, its subgroups'
// lanes for the cooperative-matrix one.
uint32_t matmul_workgroup_size(const MatmulConfig& config);
// Refuses, naming `op` (matmul, matmul_id), a config its kernel or the device cannot run.
void check_matmul_config(const MatmulConfig& config, const gpu::Capabilities& caps, gguf::GgmlType type,
                         std::string_view op);
// The device's launch shape; with int8_activations that of the int8 kernel (Q4_0 and Q8_0 only).
MatmulConfig matmul_config(const gpu::Capabilities& caps, gguf::GgmlType type, bool int8_activations = false);
// The cooperative-matrix kernel's launch for a product shape: 2 x 2 subgroups of 2 x 2 products
// (64 x 64 for 16 x 16 products).
MatmulConfig coopmat_matmul_config(const CoopmatShape& shape);
std::string matmul_pipeline_name(gguf::GgmlType type, const MatmulConfig& config, bool expert_ids = false);
// The pipeline of a config's kernel, plain or over the selected experts (ops/expert_matmul.h).
const gpu::Pipeline& matmul_pipeline(gpu::Device& device, gguf::GgmlType type, const MatmulConfig& config,
                                     bool expert_ids = false);

// Bytes of quantize_q8's output for n_tokens vectors of cols floats (cols a multiple of 32): per 32
// values 9 words, the scale and 8 words of 4 int8 values.
uint64_t int8_activation_bytes(uint64_t n_tokens, uint32_t cols);
// x [n_tokens][cols] into int8 blocks, for a matmul with int8_activations.
graph::Dispatch quantize_q8(gpu::Device& device, const graph::Region& x, const graph::Region& x_int8,
                            uint32_t n_tokens, uint32_t cols);

// A projection with int8 activations: quantize_q8 of x into x_int8 (int8_activation_bytes), then
// matmul from it with the device's int8 launch, or `config`.
std::vector<graph::Dispatch> matmul_int8(gpu::Device& device, const WeightMatrix& weights, const graph::Region& x,
                                         const graph::Region& x_int8, const graph::Region& y, uint32_t n_tokens,
                                         bool accumulate, std::optional<MatmulConfig> config = std::nullopt);

// The dispatches computing y = W x (y += W x with accumulate) for n_tokens vectors: one per weight
// segment and per 24576 columns (longer rows are summed in pieces, in order, so they must run in
// order). A config (for tests and benchmarks) replaces the device's default; with int8_activations, x
// is quantize_q8's output.
std::vector<graph::Dispatch> matmul(gpu::Device& device, const WeightMatrix& weights, const graph::Region& x,
                                    const graph::Region& y, uint32_t n_tokens, bool accumulate,
                                    std::optional<MatmulConfig> config = std::nullopt);

}  // namespace vkllm::ops
