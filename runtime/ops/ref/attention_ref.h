#pragma once
// Reference KV-cache write/read and causal attention (model-notes.md C.0 "Attention").
// The cache is a single sequence: the key at cell j has position j.
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
// out [n_tokens][n_head][head_dim_v]. The query at positions[t] attends to cells 0..positions[t]
// (and only the last n_swa of them with a sliding window), in double precision.
void attention(std::span<const float> q, std::span<const float> k, std::span<const float> v,
               std::span<const int32_t> positions, const ops::AttentionConfig& config,
               std::span<float> out);

}  // namespace vkllm::ref
