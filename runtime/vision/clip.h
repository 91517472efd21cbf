#pragma once
// An mmproj GGUF (general.architecture "clip"): the vision hyperparameters (model-notes.md D.0) and
// the ViT and projector weights on the GPU, in their GGUF types.
#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "gguf/reader.h"
#include "model/weights.h"

namespace vkllm::vision {

enum class ProjectorType { Gemma3, Pixtral };

struct ClipHparams {
    ProjectorType projector = ProjectorType::Gemma3;
    uint32_t n_embd = 0, n_ff = 0, n_layer = 0, n_head = 0, head_dim = 0;
    uint32_t image_size = 0, patch_size = 0;
    uint32_t projection_dim = 0;  // the text model's n_embd
    float eps = 0;
    std::array<float, 3> image_mean{}, image_std{};
    uint32_t pool_kernel = 1;  // Gemma 3: projector.scale_factor (default 4)
    uint32_t n_merge = 1;      // Pixtral: spatial_merge_size
    float rope_theta = 10000.0f;  // Pixtral's 2-D RoPE; hard-coded in clip.cpp
};

ClipHparams read_clip_hparams(const gguf::File& file);

using model::Weight;

// One ViT block; biases are absent in Pixtral, present in SigLIP.
struct VitLayerWeights {
    Weight ln1, ln2;                         // {n_embd}
    std::optional<Weight> ln1_b, ln2_b;      // {n_embd}
    Weight attn_q, attn_k, attn_v, attn_out;  // {n_embd, n_embd}
    std::optional<Weight> attn_q_b, attn_k_b, attn_v_b, attn_out_b;
    std::optional<Weight> ffn_gate;          // {n_embd, n_ff}: gated SiLU (Pixtral)
    Weight ffn_up;                           // {n_embd, n_ff}
    Weight ffn_down;                         // {n_ff, n_embd}
    std::optional<Weight> ffn_up_b, ffn_down_b;
};

struct ClipWeights {
    Weight patch_embd;                   // {P*P*3, n_embd}: the kernel {P, P, 3, n_embd} as rows
    std::optional<Weight> patch_bias;    // {n_embd}
    std::optional<Weight> position_embd;  // {n_embd, n_patches} (SigLIP)
    std::optional<Weight> pre_ln;         // {n_embd} (Pixtral, RMSNorm)
    std::optional<Weight> post_ln, post_ln_b;  // {n_embd} (SigLIP, LayerNorm)
    std::vector<VitLayerWeights> layers;
    // Gemma 3 projector.
    std::optional<Weight> soft_emb_norm;      // {n_embd}
    std::optional<Weight> input_projection;   // transposed at load to {n_embd, projection_dim}
    // Pixtral projector.
    std::optional<Weight> input_norm;     // {n_embd}
    std::optional<Weight> patch_merger;   // {n_embd * m * m, n_embd}
    std::optional<Weight> mm_1, mm_1_b, mm_2, mm_2_b;  // {n_embd, projection_dim}, {projection_dim, projection_dim}
    std::optional<Weight> img_break;      // {projection_dim}
};

ClipWeights load_clip_weights(gpu::Device& device, const gguf::File& file, const ClipHparams& hp);

}  // namespace vkllm::vision
