#pragma once
// The C++ reference for ggml's weight formats (model-notes.md A.3, A.4): block layouts, exact
// dequantization, and quantizers that reproduce ggml's quantize_row_*_ref bit for bit. The GPU
// kernels are checked against dequantize(); tools and tests make weights with quantize().
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "gguf/reader.h"
#include "gguf/types.h"

namespace vkllm::gguf {

// IEEE binary16 and bfloat16 scalars. Narrowing rounds to nearest even; NaN stays a quiet NaN.
float fp16_to_fp32(uint16_t h);
uint16_t fp32_to_fp16(float f);
float bf16_to_fp32(uint16_t h);
uint16_t fp32_to_bf16(float f);

// Block layouts as ggml-common.h defines them; d, m, dmin are fp16 bits. The float types are blocks
// of one value. weight_types.def names one per row: Block<TYPE>.
struct BlockF32 { float value; };
struct BlockF16 { uint16_t value; };
struct BlockBF16 { uint16_t value; };
struct BlockQ4_0 { uint16_t d; uint8_t qs[16]; };
struct BlockQ4_1 { uint16_t d, m; uint8_t qs[16]; };
struct BlockQ5_0 { uint16_t d; uint8_t qh[4]; uint8_t qs[16]; };
struct BlockQ5_1 { uint16_t d, m; uint8_t qh[4]; uint8_t qs[16]; };
struct BlockQ8_0 { uint16_t d; int8_t qs[32]; };
struct BlockQ4_K { uint16_t d, dmin; uint8_t scales[12]; uint8_t qs[128]; };
struct BlockQ5_K { uint16_t d, dmin; uint8_t scales[12]; uint8_t qh[32]; uint8_t qs[128]; };
struct BlockQ6_K { uint8_t ql[128]; uint8_t qh[64]; int8_t scales[16]; uint16_t d; };

#define VKLLM_WEIGHT_TYPE(type, name, file_type, fp16_kernels) \
    static_assert(sizeof(Block##type) == block_bytes(GgmlType::type));
#include "gguf/weight_types.def"
#undef VKLLM_WEIGHT_TYPE

// True for the types of weight_types.def, each of which has a Block<TYPE> above.
bool has_reference(GgmlType type);

// Dequantizes out.size() values (a multiple of the block size) from exactly
// row_bytes(type, out.size()) bytes of blocks; throws vkllm::Error on other types or sizes.
void dequantize(GgmlType type, std::span<const std::byte> blocks, std::span<float> out);
// Quantizes values as ggml's quantize_row_<type>_ref does; the inputs must be finite.
void quantize(GgmlType type, std::span<const float> values, std::span<std::byte> blocks);

std::vector<float> dequantize(const Tensor& tensor);               // all elements, ggml order
std::vector<std::byte> quantize(GgmlType type, std::span<const float> values);

}  // namespace vkllm::gguf
