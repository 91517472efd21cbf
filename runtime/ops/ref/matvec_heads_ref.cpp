#include "ops/ref/matvec_heads_ref.h"

#include <vector>

#include "gguf/types.h"
#include "ops/ref/matmul_ref.h"

namespace vkllm::ref {

void matvec_heads(gguf::GgmlType type, std::span<const std::byte> weights, uint32_t rows, uint32_t cols,
                  uint32_t n_head, uint32_t n_tokens, std::span<const float> x, ops::HeadLayout x_layout,
                  std::span<float> y, ops::HeadLayout y_layout) {
    const size_t head_bytes = size_t(rows) * gguf::row_bytes(type, cols);
    std::vector<float> head_x(size_t(n_tokens) * cols), head_y(size_t(n_tokens) * rows);
    for (uint32_t h = 0; h < n_head; ++h) {
        for (uint32_t t = 0; t < n_tokens; ++t)
            for (uint32_t c = 0; c < cols; ++c)
                head_x[size_t(t) * cols + c] = x[size_t(t) * x_layout.stride + x_layout.offset + h * x_layout.head_stride + c];
        matmul(type, weights.subspan(h * head_bytes, head_bytes), rows, cols, head_x, n_tokens, head_y);
        for (uint32_t t = 0; t < n_tokens; ++t)
            for (uint32_t r = 0; r < rows; ++r)
                y[size_t(t) * y_layout.stride + y_layout.offset + h * y_layout.head_stride + r] = head_y[size_t(t) * rows + r];
    }
}

}  // namespace vkllm::ref
