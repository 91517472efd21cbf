#pragma once
// copy_rows (shaders/copy_rows.comp): a block of columns moved between row-major f32 layouts of
// different strides, e.g. the queries out of a fused QKV projection of many tokens.
#include <cstdint>

#include "graph/graph.h"

namespace vkllm::ops {

struct RowBlock {
    uint32_t stride = 0;  // floats between rows
    uint32_t offset = 0;  // first column
};

// dst[r][dst.offset + c] = src[r][src.offset + c] for r < rows, c < width.
graph::Dispatch copy_rows(gpu::Device& device, const graph::Region& src, RowBlock from, const graph::Region& dst,
                          RowBlock to, uint32_t rows, uint32_t width);

}  // namespace vkllm::ops
