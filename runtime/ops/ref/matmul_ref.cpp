#include "ops/ref/matmul_ref.h"

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

}  // namespace vkllm::ref
