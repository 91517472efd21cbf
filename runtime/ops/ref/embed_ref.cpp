#include "ops/ref/embed_ref.h"

#include <algorithm>

#include "gguf/quants.h"

namespace vkllm::ref {

void get_rows(gguf::GgmlType type, std::span<const std::byte> weight, uint32_t n_cols,
              std::span<const int32_t> ids, std::span<float> out) {
    const size_t row_bytes = gguf::row_bytes(type, n_cols), n_rows = weight.size() / row_bytes;
    for (size_t t = 0; t < ids.size(); ++t) {
        std::span<float> row = out.subspan(t * n_cols, n_cols);
        if (ids[t] < 0 || size_t(ids[t]) >= n_rows)
            std::fill(row.begin(), row.end(), 0.0f);
        else
            gguf::dequantize(type, weight.subspan(size_t(ids[t]) * row_bytes, row_bytes), row);
    }
}

}  // namespace vkllm::ref
