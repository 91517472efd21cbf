#pragma once
// Reference KV-cache write/read and attention (model-notes.md C.0 "Attention") over a single
// sequence, full or circular (ops/attention.h).
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "ops/attention_config.h"

namespace vkllm::ref {

// Stores rows [n_tokens][row_size] into the cells slots[t] of a cache of cache.size() bytes.
void kv_write(ops::KvType type, std::span<const float> rows, std::span<const int32_t> slots,
              uint32_t row_size, std::span<std::byte> cache);

// The whole cache as f32 [n_cells][row_size].
std::vector<float> kv_read(ops::KvType type, std::span<const std::byte> cache, uint32_t row_size);

// q [n_tokens][n_head][head_dim_k]; k, v: dequantized caches [n_cells][n_head_kv][head_dim_*];
// out [n_tokens][n_head][head_dim_v]. The cache holds positions base .. base + n_cells - 1, base =
// max(0, P - n_cells + 1) with P the last query's position, each at its cell mod n_cells; the query
// at positions[t] attends to those up to positions[t] (up to P when not causal), the last n_swa of
// them with a sliding window, in double precision.
void attention(std::span<const float> q, std::span<const float> k, std::span<const float> v,
               std::span<const int32_t> positions, const ops::AttentionConfig& config,
               std::span<float> out);

}  // namespace vkllm::ref
