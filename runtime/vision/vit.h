#pragma once
// The encoder's passes (the vision component's own header): the ViT blocks both encoders share
// (llama.cpp clip_graph::build_vit), and each projector.
#include <cstdint>

#include "graph/graph.h"
#include "model/blocks.h"
#include "vision/clip.h"
#include "vision/image.h"
#include "vision/preprocess.h"

namespace vkllm::vision {

// The patch grid one run encodes and the per-grid inputs the host writes once.
struct VitInputs {
    uint32_t nx = 0, ny = 0;
    graph::Region patches;         // f32 [nx*ny][3*P*P], unfolded (preprocess.h)
    graph::Region slots;           // int32 [n]: 0 .. n-1, the K/V rows attention reads
    graph::Region mask_positions;  // int32 [n]: n-1 each, so that every patch sees every other
    graph::Region pos_h, pos_w;    // int32 [n]: patch row and column (Pixtral's 2-D RoPE)
    graph::Region phases_h, phases_w;  // ops::rope_phase_table of pixtral_rope_configs
};

// Patch embedding and the blocks: returns x f32 [nx*ny][n_embd].
graph::Region build_vit(model::blocks::Builder& b, const ClipHparams& hp, const ClipWeights& w, const VitInputs& in);

// Tokens the projector writes for a grid of nx x ny patches.
uint32_t output_tokens(const ClipHparams& hp, const ClipWeights& w, uint32_t nx, uint32_t ny);
// The projector over x, into out f32 [output_tokens][projection_dim].
void build_gemma3_projector(model::blocks::Builder& b, const ClipHparams& hp, const ClipWeights& w, graph::Region x,
                            uint32_t nx, uint32_t ny, graph::Region out);
void build_pixtral_projector(model::blocks::Builder& b, const ClipHparams& hp, const ClipWeights& w, graph::Region x,
                             uint32_t nx, uint32_t ny, graph::Region out);

// Pixtral's 2-D RoPE as two NORMAL ropes of head_dim/2 dims: rows (pos_h) rotate the first half of
// each head at even frequencies, columns (pos_w) the second half at odd ones (model-notes.md D.3).
std::array<ops::RopeConfig, 2> pixtral_rope_configs(const ClipHparams& hp);

// The size the encoder's input image is letterboxed to (bilinear) for each projector: Gemma 3's
// image_size square, Pixtral's multiples of patch * merge, 8 to 1024 merged tokens (model-notes.md
// D.2, D.3).
ImageSize gemma3_input_size(const ClipHparams& hp);
ImageSize pixtral_input_size(const ClipHparams& hp, const Image& image);

}  // namespace vkllm::vision
