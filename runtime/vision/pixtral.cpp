// Pixtral's vision side (PROJECTOR_TYPE_PIXTRAL): the token-capped input size, the 2-D RoPE, and the
// projector, patch merger, GELU MLP and [IMG_BREAK] rows (model-notes.md D.3, llama.cpp
// models/pixtral.cpp).
#include <cmath>

#include "core/error.h"
#include "ops/gelu.h"
#include "ops/patch_grid.h"
#include "ops/rmsnorm.h"
#include "vision/preprocess.h"
#include "vision/vit.h"

namespace vkllm::vision {
namespace {

// Merged tokens an image may take (clip.cpp set_limit_image_tokens(8, 1024)).
constexpr uint64_t min_image_tokens = 8, max_image_tokens = 1024;

}  // namespace

ImageSize pixtral_input_size(const ClipHparams& hp, const Image& image) {
    const uint32_t align = hp.patch_size * hp.n_merge;
    const uint64_t token_pixels = uint64_t(align) * align;
    return size_preserving_ratio({image.width, image.height}, align, min_image_tokens * token_pixels,
                                 max_image_tokens * token_pixels);
}

std::array<ops::RopeConfig, 2> pixtral_rope_configs(const ClipHparams& hp) {
    ops::RopeConfig rows{.n_dims = hp.head_dim / 2, .mode = ops::RopeMode::Normal, .freq_base = hp.rope_theta};
    ops::RopeConfig columns = rows;
    columns.freq_scale = std::pow(hp.rope_theta, -2.0f / float(hp.head_dim));
    return {rows, columns};
}

void build_pixtral_projector(model::blocks::Builder& b, const ClipHparams& hp, const ClipWeights& w, graph::Region x,
                             uint32_t nx, uint32_t ny, graph::Region out) {
    const uint32_t m = hp.n_merge, px = nx / m, py = ny / m, n_merged = px * py, n_text = hp.projection_dim;
    constexpr uint64_t f32 = sizeof(float);
    if (w.input_norm)
        b.graph.add("mm.input_norm",
                    ops::rmsnorm(b.device, x, w.input_norm->region(b.graph), x, hp.n_embd, nx * ny, hp.eps));
    model::blocks::Builder merged_tokens{b.graph, b.device, b.step, {n_merged, true}};
    graph::Region merged = x;
    if (w.patch_merger) {
        auto gathered = b.graph.transient("mm.patch_merge_in", uint64_t(nx) * ny * hp.n_embd * f32);
        b.graph.add("mm.patch_merge", ops::patch_merge(b.device, {hp.n_embd, nx, ny}, m, x, gathered));
        merged = b.graph.transient("mm.patch_merger_out", uint64_t(n_merged) * hp.n_embd * f32);
        model::blocks::project(merged_tokens, "mm.patch_merger", *w.patch_merger, gathered, merged, false);
    }
    auto hidden = b.graph.transient("mm.1_out", uint64_t(n_merged) * n_text * f32);
    model::blocks::project(merged_tokens, "mm.1", *w.mm_1, merged, hidden, false);
    if (w.mm_1_b)
        b.graph.add("mm.1.bias",
                    ops::add(b.device, hidden, w.mm_1_b->region(b.graph), hidden, n_merged * n_text, n_text));
    b.graph.add("mm.gelu", ops::gelu(b.device, hidden, hidden, n_merged * n_text));
    graph::Region projected = w.img_break ? b.graph.transient("mm.2_out", uint64_t(n_merged) * n_text * f32) : out;
    model::blocks::project(merged_tokens, "mm.2", *w.mm_2, hidden, projected, false);
    if (w.mm_2_b)
        b.graph.add("mm.2.bias",
                    ops::add(b.device, projected, w.mm_2_b->region(b.graph), projected, n_merged * n_text, n_text));
    // [IMG_BREAK] after every row of merged tokens but the last.
    if (w.img_break)
        b.graph.add("mm.img_break",
                    ops::row_breaks(b.device, {n_text, px, py}, projected, w.img_break->region(b.graph), out));
}

uint32_t output_tokens(const ClipHparams& hp, const ClipWeights& w, uint32_t nx, uint32_t ny) {
    if (hp.projector == ProjectorType::Gemma3) return (nx / hp.pool_kernel) * (ny / hp.pool_kernel);
    const uint32_t px = nx / hp.n_merge, py = ny / hp.n_merge;
    return w.img_break ? px * py + py - 1 : px * py;
}

}  // namespace vkllm::vision
