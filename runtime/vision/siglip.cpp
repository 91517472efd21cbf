// Gemma 3's vision side (PROJECTOR_TYPE_GEMMA3): the SigLIP input and the projector, average pool,
// soft-embedding RMSNorm and input projection (model-notes.md D.2, llama.cpp models/siglip.cpp).
#include "core/error.h"
#include "ops/patch_grid.h"
#include "ops/rmsnorm.h"
#include "vision/preprocess.h"
#include "vision/vit.h"

namespace vkllm::vision {

ImageSize gemma3_input_size(const ClipHparams& hp) { return {hp.image_size, hp.image_size}; }

void build_gemma3_projector(model::blocks::Builder& b, const ClipHparams& hp, const ClipWeights& w, graph::Region x,
                            uint32_t nx, uint32_t ny, graph::Region out) {
    const uint32_t k = hp.pool_kernel, n_out = (nx / k) * (ny / k);
    graph::Region pooled = x;
    if (k > 1) {
        pooled = b.graph.transient("mm.pooled", uint64_t(n_out) * hp.n_embd * sizeof(float));
        b.graph.add("mm.avg_pool", ops::avg_pool_2d(b.device, {hp.n_embd, nx, ny}, k, x, pooled));
    }
    auto normed = b.graph.transient("mm.soft_emb_norm_out", uint64_t(n_out) * hp.n_embd * sizeof(float));
    b.graph.add("mm.soft_emb_norm",
                ops::rmsnorm(b.device, pooled, w.soft_emb_norm->region(b.graph), normed, hp.n_embd, n_out, hp.eps));
    model::blocks::Builder projection{b.graph, b.device, b.step, {n_out, true}};
    model::blocks::project(projection, "mm.input_projection", *w.input_projection, normed, out, false);
}

}  // namespace vkllm::vision
