#include "ops/ref/matmul_ref.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <vector>

#include "core/error.h"
#include "gguf/quants.h"

namespace vkllm::ref {

void matmul(gguf::GgmlType type, std::span<const std::byte> weights, uint32_t rows, uint32_t cols,
            std::span<const float> x, uint32_t n_tokens, std::span<float> y, bool accumulate) {
    const uint64_t row_bytes = gguf::row_bytes(type, cols);
    if (weights.size() < row_bytes * rows || x.size() < uint64_t(n_tokens) * cols ||
        y.size() < uint64_t(n_tokens) * rows)
        fail("ref::matmul: {} weights of {} x {} with {} tokens: a buffer is too small", gguf::type_name(type),
             rows, cols, n_tokens);
    std::vector<float> row(cols);
    for (uint32_t r = 0; r < rows; ++r) {
        gguf::dequantize(type, weights.subspan(r * row_bytes, row_bytes), row);
        for (uint32_t t = 0; t < n_tokens; ++t) {
            const float* in = &x[size_t(t) * cols];
            double sum = 0.0;
            for (uint32_t k = 0; k < cols; ++k) sum += double(row[k]) * in[k];
            float& out = y[size_t(t) * rows + r];
            out = accumulate ? float(out + sum) : float(sum);
        }
    }
}

std::vector<uint32_t> quantize_q8(std::span<const float> x, uint32_t cols) {
    if (cols % 32 != 0 || x.size() % cols != 0)
        fail("ref::quantize_q8: {} values in rows of {} (a multiple of 32)", x.size(), cols);
    std::vector<uint32_t> blocks;
    blocks.reserve(x.size() / 32 * 9);
    for (size_t begin = 0; begin < x.size(); begin += 32) {
        const std::span<const float> values = x.subspan(begin, 32);
        float amax = 0.0f;
        for (float v : values) amax = std::max(amax, std::fabs(v));
        const float d = amax / 127.0f, inverse = d != 0.0f ? 1.0f / d : 0.0f;
        blocks.push_back(std::bit_cast<uint32_t>(gguf::fp16_to_fp32(gguf::fp32_to_fp16(d))));
        for (size_t i = 0; i < 32; i += 4) {
            uint32_t word = 0;
            for (size_t j = 0; j < 4; ++j) {
                const auto q = int32_t(std::clamp(std::round(values[i + j] * inverse), -127.0f, 127.0f));
                word |= (uint32_t(q) & 0xFFu) << (8 * j);
            }
            blocks.push_back(word);
        }
    }
    return blocks;
}

std::vector<float> dequantize_q8(std::span<const uint32_t> blocks) {
    if (blocks.size() % 9 != 0) fail("ref::dequantize_q8: {} words are not whole blocks of 9", blocks.size());
    std::vector<float> values;
    values.reserve(blocks.size() / 9 * 32);
    for (size_t block = 0; block < blocks.size(); block += 9) {
        const float d = std::bit_cast<float>(blocks[block]);
        for (size_t w = 1; w < 9; ++w)
            for (uint32_t j = 0; j < 4; ++j) values.push_back(float(int8_t(uint8_t(blocks[block + w] >> (8 * j)))) * d);
    }
    return values;
}

}  // namespace vkllm::ref
