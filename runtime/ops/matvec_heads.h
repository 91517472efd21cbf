#pragma once
// Per-head products for multi-head latent attention (model-notes.md C.4; shaders/matvec_heads.comp):
// a 3-D weight {cols, rows, n_head} stacks one rows x cols matrix per query head, and head h's vector
// of every token is multiplied by head h's matrix. MLA uses it twice: attn_k_b takes each head's
// no-RoPE query into the latent space, attn_v_b brings each head's latent output back.
#include <cstdint>

#include "graph/graph.h"
#include "ops/matvec.h"

namespace vkllm::ops {

// Where head h of token t starts in a strided f32 buffer: t * stride + offset + h * head_stride floats.
struct HeadLayout {
    uint32_t stride = 0;
    uint32_t offset = 0;
    uint32_t head_stride = 0;
};

// y[t][h][r] = sum_c W[h][r][c] * x[t][h][c] for t < n_tokens, h < n_head, r < rows: weights holds
// n_head * rows rows of cols values (one buffer segment); x's layout multiples of 4 floats.
graph::Dispatch matvec_heads(gpu::Device& device, const WeightMatrix& weights, uint32_t n_head, uint32_t n_tokens,
                             const graph::Region& x, HeadLayout x_layout, const graph::Region& y, HeadLayout y_layout);

}  // namespace vkllm::ops
