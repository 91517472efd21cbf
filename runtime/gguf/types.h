#pragma once
// ggml tensor types as stored in GGUF (ggml.h `enum ggml_type`; model-notes.md A.3) and their block
// geometry. A tensor row of ne[0] elements is ne[0] / block_size blocks of block_bytes each.
#include <cstdint>
#include <optional>
#include <string_view>

namespace vkllm::gguf {

enum class GgmlType : uint32_t {
    F32 = 0,
    F16 = 1,
    Q4_0 = 2,
    Q4_1 = 3,
    Q5_0 = 6,
    Q5_1 = 7,
    Q8_0 = 8,
    Q8_1 = 9,
    Q2_K = 10,
    Q3_K = 11,
    Q4_K = 12,
    Q5_K = 13,
    Q6_K = 14,
    Q8_K = 15,
    IQ2_XXS = 16,
    IQ2_XS = 17,
    IQ3_XXS = 18,
    IQ1_S = 19,
    IQ4_NL = 20,
    IQ3_S = 21,
    IQ2_S = 22,
    IQ4_XS = 23,
    I8 = 24,
    I16 = 25,
    I32 = 26,
    I64 = 27,
    F64 = 28,
    IQ1_M = 29,
    BF16 = 30,
    TQ1_0 = 34,
    TQ2_0 = 35,
    MXFP4 = 39,
    NVFP4 = 40,
    Q1_0 = 41,
    Q2_0 = 42,
};

struct TypeTraits {
    GgmlType type;
    std::string_view name;  // as ggml and gguf-dump print it: "q4_K", "f16"
    uint32_t block_size;    // elements per block
    uint32_t block_bytes;   // bytes per block
};

// Every type id a GGUF file may hold, in id order. Ids 4, 5, 31-33, 36-38 were removed from ggml.
inline constexpr TypeTraits type_table[] = {
    {GgmlType::F32, "f32", 1, 4},
    {GgmlType::F16, "f16", 1, 2},
    {GgmlType::Q4_0, "q4_0", 32, 18},
    {GgmlType::Q4_1, "q4_1", 32, 20},
    {GgmlType::Q5_0, "q5_0", 32, 22},
    {GgmlType::Q5_1, "q5_1", 32, 24},
    {GgmlType::Q8_0, "q8_0", 32, 34},
    {GgmlType::Q8_1, "q8_1", 32, 36},
    {GgmlType::Q2_K, "q2_K", 256, 84},
    {GgmlType::Q3_K, "q3_K", 256, 110},
    {GgmlType::Q4_K, "q4_K", 256, 144},
    {GgmlType::Q5_K, "q5_K", 256, 176},
    {GgmlType::Q6_K, "q6_K", 256, 210},
    {GgmlType::Q8_K, "q8_K", 256, 292},
    {GgmlType::IQ2_XXS, "iq2_xxs", 256, 66},
    {GgmlType::IQ2_XS, "iq2_xs", 256, 74},
    {GgmlType::IQ3_XXS, "iq3_xxs", 256, 98},
    {GgmlType::IQ1_S, "iq1_s", 256, 50},
    {GgmlType::IQ4_NL, "iq4_nl", 32, 18},
    {GgmlType::IQ3_S, "iq3_s", 256, 110},
    {GgmlType::IQ2_S, "iq2_s", 256, 82},
    {GgmlType::IQ4_XS, "iq4_xs", 256, 136},
    {GgmlType::I8, "i8", 1, 1},
    {GgmlType::I16, "i16", 1, 2},
    {GgmlType::I32, "i32", 1, 4},
    {GgmlType::I64, "i64", 1, 8},
    {GgmlType::F64, "f64", 1, 8},
    {GgmlType::IQ1_M, "iq1_m", 256, 56},
    {GgmlType::BF16, "bf16", 1, 2},
    {GgmlType::TQ1_0, "tq1_0", 256, 54},
    {GgmlType::TQ2_0, "tq2_0", 256, 66},
    {GgmlType::MXFP4, "mxfp4", 32, 17},
    {GgmlType::NVFP4, "nvfp4", 64, 36},
    {GgmlType::Q1_0, "q1_0", 128, 18},
    {GgmlType::Q2_0, "q2_0", 64, 18},
};

// The traits of a raw type id from a file; nullopt for ids ggml never had or removed.
constexpr std::optional<TypeTraits> find_type(uint32_t id) {
    for (const TypeTraits& traits : type_table)
        if (uint32_t(traits.type) == id) return traits;
    return std::nullopt;
}

// The traits of a known type (every GgmlType enumerator is in type_table).
constexpr const TypeTraits& traits(GgmlType type) {
    for (const TypeTraits& entry : type_table)
        if (entry.type == type) return entry;
    return type_table[0];  // unreachable for a valid enumerator
}

constexpr std::string_view type_name(GgmlType type) { return traits(type).name; }
constexpr uint32_t block_size(GgmlType type) { return traits(type).block_size; }
constexpr uint32_t block_bytes(GgmlType type) { return traits(type).block_bytes; }

// What vkllm runs of a weight type: one row of weight_types.def.
struct WeightTypeInfo {
    GgmlType type;
    std::string_view name;  // shader and pipeline suffix: "q4_k"
    uint32_t file_type;     // general.file_type of a file whose matrices are all of this type
    bool fp16_kernels;      // the matvec and matmul kernels have an fp16-arithmetic variant
};

inline constexpr WeightTypeInfo weight_types[] = {
#define VKLLM_WEIGHT_TYPE(type, name, file_type, fp16_kernels) {GgmlType::type, #name, file_type, fp16_kernels},
#include "gguf/weight_types.def"
#undef VKLLM_WEIGHT_TYPE
};

// The row of a type vkllm runs (dequantizer and GPU kernels); nullptr for the others.
constexpr const WeightTypeInfo* find_weight_type(GgmlType type) {
    for (const WeightTypeInfo& info : weight_types)
        if (info.type == type) return &info;
    return nullptr;
}
constexpr bool runs_on_vkllm(GgmlType type) { return find_weight_type(type) != nullptr; }

// Bytes of one row of n elements; n must be a multiple of the block size.
constexpr uint64_t row_bytes(GgmlType type, uint64_t n) {
    return n / block_size(type) * block_bytes(type);
}

}  // namespace vkllm::gguf
