#include "ops/ref/attention_ref.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "gguf/quants.h"

namespace vkllm::ref {

using ops::KvType;
using ops::kv_q8_block;

void kv_write(KvType type, std::span<const float> rows, std::span<const int32_t> slots,
              uint32_t row_size, std::span<std::byte> cache) {
    const size_t n_cells = cache.size() / ops::kv_cache_bytes(type, 1, row_size);
    std::byte* scales = cache.data() + n_cells * row_size;  // Q8_0 only
    for (size_t t = 0; t < slots.size(); ++t) {
        const float* row = &rows[t * row_size];
        const size_t cell = size_t(slots[t]);
        if (type == KvType::F16) {
            for (uint32_t i = 0; i < row_size; ++i) {
                uint16_t half = gguf::fp32_to_fp16(row[i]);
                std::memcpy(&cache[(cell * row_size + i) * 2], &half, 2);
            }
            continue;
        }
        for (uint32_t b = 0; b < row_size / kv_q8_block; ++b) {
            const float* x = row + b * kv_q8_block;
            float amax = 0.0f;
            for (uint32_t i = 0; i < kv_q8_block; ++i) amax = std::max(amax, std::fabs(x[i]));
            float d = amax / 127.0f, inverse = d != 0.0f ? 1.0f / d : 0.0f;
            for (uint32_t i = 0; i < kv_q8_block; ++i)
                cache[cell * row_size + b * kv_q8_block + i] = std::byte(int8_t(std::round(x[i] * inverse)));
            uint16_t half = gguf::fp32_to_fp16(d);
            std::memcpy(scales + (cell * row_size / kv_q8_block + b) * 2, &half, 2);
        }
    }
}

std::vector<float> kv_read(KvType type, std::span<const std::byte> cache, uint32_t row_size) {
    const size_t n_values = cache.size() / ops::kv_cache_bytes(type, 1, row_size) * row_size;
    std::vector<float> values(n_values);
    const std::byte* scales = cache.data() + n_values;
    for (size_t i = 0; i < n_values; ++i) {
        uint16_t half;
        if (type == KvType::F16) {
            std::memcpy(&half, &cache[i * 2], 2);
            values[i] = gguf::fp16_to_fp32(half);
        } else {
            std::memcpy(&half, scales + i / kv_q8_block * 2, 2);
            values[i] = float(int8_t(cache[i])) * gguf::fp16_to_fp32(half);
        }
    }
    return values;
}

void attention(std::span<const float> q, std::span<const float> k, std::span<const float> v,
               std::span<const int32_t> positions, const ops::AttentionConfig& config,
               std::span<float> out) {
    const uint32_t hd_k = config.head_dim_k, hd_v = config.head_dim_v;
    const uint32_t group = config.n_head / config.n_head_kv;
    const int64_t n_cells = int64_t(k.size() / (config.n_head_kv * hd_k));
    const int64_t last_pos = positions.back(), base = std::max<int64_t>(0, last_pos - n_cells + 1);
    std::vector<int64_t> cell_pos(n_cells);
    for (int64_t j = 0; j < n_cells; ++j) cell_pos[j] = base + ((j - base) % n_cells + n_cells) % n_cells;
    std::vector<int64_t> seen;
    std::vector<double> scores, acc(hd_v);
    for (size_t t = 0; t < positions.size(); ++t) {
        const int64_t pos = positions[t], last = config.causal ? pos : last_pos;
        seen.clear();
        for (int64_t j = 0; j < n_cells; ++j)
            if (cell_pos[j] >= 0 && cell_pos[j] <= last && (config.n_swa == 0 || pos - cell_pos[j] < config.n_swa))
                seen.push_back(j);
        for (uint32_t h = 0; h < config.n_head; ++h) {
            const float* qh = &q[(t * config.n_head + h) * hd_k];
            const size_t kv_head = h / group;
            scores.clear();
            std::fill(acc.begin(), acc.end(), 0.0);
            for (int64_t j : seen) {
                const float* kj = &k[(j * config.n_head_kv + kv_head) * hd_k];
                double s = 0.0;
                for (uint32_t d = 0; d < hd_k; ++d) s += double(qh[d]) * kj[d];
                s *= config.scale;
                if (config.softcap != 0.0f) s = config.softcap * std::tanh(s / config.softcap);
                scores.push_back(s);
            }
            const double max = scores.empty() ? 0.0 : *std::max_element(scores.begin(), scores.end());
            double sum = 0.0;
            for (size_t i = 0; i < seen.size(); ++i) {
                const double p = std::exp(scores[i] - max);
                const int64_t j = seen[i];
                const float* vj = &v[(j * config.n_head_kv + kv_head) * hd_v];
                sum += p;
                for (uint32_t d = 0; d < hd_v; ++d) acc[d] += p * vj[d];
            }
            for (uint32_t d = 0; d < hd_v; ++d)  // no key seen (a negative position): zeros
                out[(t * config.n_head + h) * hd_v + d] = sum > 0.0 ? float(acc[d] / sum) : 0.0f;
        }
    }
}

}  // namespace vkllm::ref
