#include "vision/clip.h"

#include <cstring>

#include <fmt/format.h>

#include "core/error.h"
#include "gguf/quants.h"
#include "model/hparams.h"

namespace vkllm::vision {
namespace {

std::array<float, 3> read_rgb(const gguf::File& file, const char* key) {
    std::optional<std::vector<float>> values = file.get_f32_array(key);
    if (!values || values->size() != 3) fail("{}: '{}' must hold 3 floats", file.name(), key);
    return {(*values)[0], (*values)[1], (*values)[2]};
}

ProjectorType read_projector_type(const gguf::File& file) {
    std::optional<std::string_view> type = file.get_string("clip.projector_type");
    if (!type) type = file.get_string("clip.vision.projector_type");
    if (!type) fail("{}: no clip.projector_type: not an mmproj file", file.name());
    if (*type == "gemma3") return ProjectorType::Gemma3;
    if (*type == "pixtral") return ProjectorType::Pixtral;
    fail("{}: projector type '{}' is not supported (gemma3 and pixtral are)", file.name(), gguf::printable(*type));
}

// GGUF stores Gemma 3's input projection untransposed ({n_text, n_embd}, HF [n_embd, n_text]);
// llama.cpp multiplies by its transpose. It is transposed once here, F16 staying F16 (exactly),
// any other type widened to F32.
Weight load_transposed(gpu::Device& device, const gguf::Tensor& tensor) {
    const uint64_t cols = tensor.ne[0], rows = tensor.ne[1];
    std::vector<float> values = gguf::dequantize(tensor);
    const bool keep_f16 = tensor.type == gguf::GgmlType::F16;
    std::vector<std::byte> bytes(cols * rows * (keep_f16 ? 2 : 4));
    for (uint64_t r = 0; r < rows; ++r)
        for (uint64_t c = 0; c < cols; ++c) {
            const float v = values[r * cols + c];
            const uint64_t at = c * rows + r;
            if (keep_f16) {
                const uint16_t h = gguf::fp32_to_fp16(v);
                std::memcpy(&bytes[at * 2], &h, 2);
            } else {
                std::memcpy(&bytes[at * 4], &v, 4);
            }
        }
    Weight weight{std::string(tensor.name), keep_f16 ? gguf::GgmlType::F16 : gguf::GgmlType::F32, uint32_t(cols),
                  uint32_t(rows), {}};
    weight.buffer = device.allocator().create(bytes.size(), gpu::MemoryDomain::Device,
                                              gguf::row_bytes(weight.type, weight.cols));
    gpu::Transfer transfer(device);
    transfer.upload(weight.buffer, 0, std::span<const std::byte>(bytes));
    transfer.flush();
    return weight;
}

}  // namespace

ClipHparams read_clip_hparams(const gguf::File& file) {
    if (file.get_string("general.architecture") != "clip")
        fail("{}: general.architecture is not 'clip': not an mmproj file", file.name());
    if (file.get_bool("clip.has_vision_encoder") == false) fail("{}: the mmproj has no vision encoder", file.name());
    model::ArchKeys keys(file, "clip");
    ClipHparams hp;
    hp.projector = read_projector_type(file);
    hp.n_embd = keys.u32("vision.embedding_length");
    hp.n_ff = keys.u32("vision.feed_forward_length");
    hp.n_layer = keys.u32("vision.block_count");
    hp.n_head = keys.u32("vision.attention.head_count");
    hp.image_size = keys.u32("vision.image_size");
    hp.patch_size = keys.u32("vision.patch_size");
    hp.projection_dim = keys.u32("vision.projection_dim");
    hp.eps = keys.f32("vision.attention.layer_norm_epsilon");
    hp.image_mean = read_rgb(file, "clip.vision.image_mean");
    hp.image_std = read_rgb(file, "clip.vision.image_std");
    if (hp.projector == ProjectorType::Gemma3) hp.pool_kernel = keys.u32("vision.projector.scale_factor", 4);
    if (hp.projector == ProjectorType::Pixtral) hp.n_merge = keys.u32("vision.spatial_merge_size", 1);
    if (hp.n_head == 0 || hp.n_embd % hp.n_head || hp.patch_size == 0 || hp.pool_kernel == 0 || hp.n_merge == 0)
        fail("{}: {} heads, patch size {}, pool {} or merge {} do not fit an embedding of {}", file.name(), hp.n_head,
             hp.patch_size, hp.pool_kernel, hp.n_merge, hp.n_embd);
    hp.head_dim = hp.n_embd / hp.n_head;
    if (hp.projector == ProjectorType::Pixtral && hp.head_dim % 4)
        fail("{}: 2-D RoPE needs a head size divisible by 4, not {}", file.name(), hp.head_dim);
    for (float s : hp.image_std)
        if (!(s > 0)) fail("{}: clip.vision.image_std must be positive", file.name());
    return hp;
}

ClipWeights load_clip_weights(gpu::Device& device, const gguf::File& file, const ClipHparams& hp) {
    model::WeightLoader loader(device, file);
    const uint64_t n_embd = hp.n_embd, n_ff = hp.n_ff, p = hp.patch_size, n_text = hp.projection_dim;
    auto vec = [&](const std::string& name) { return loader.load_optional(name, {n_embd}); };
    ClipWeights w;
    w.patch_embd = loader.load("v.patch_embd.weight", {p, p, 3, n_embd});
    w.patch_embd.rows = uint32_t(n_embd);
    w.patch_embd.cols = uint32_t(p * p * 3);
    w.patch_bias = vec("v.patch_embd.bias");
    const uint64_t n_patches = (hp.image_size / p) * (hp.image_size / p);
    if (hp.projector == ProjectorType::Gemma3)
        w.position_embd = loader.load("v.position_embd.weight", {n_embd, n_patches});
    w.pre_ln = vec("v.pre_ln.weight");
    w.post_ln = vec("v.post_ln.weight");
    w.post_ln_b = vec("v.post_ln.bias");
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        auto name = [il](const char* tensor, const char* kind) { return fmt::format("v.blk.{}.{}.{}", il, tensor, kind); };
        auto square = [&](const char* tensor) { return loader.load(name(tensor, "weight"), {n_embd, n_embd}); };
        auto bias = [&](const char* tensor, uint64_t n) { return loader.load_optional(name(tensor, "bias"), {n}); };
        w.layers.push_back({
            .ln1 = loader.load(name("ln1", "weight"), {n_embd}), .ln2 = loader.load(name("ln2", "weight"), {n_embd}),
            .ln1_b = bias("ln1", n_embd), .ln2_b = bias("ln2", n_embd),
            .attn_q = square("attn_q"), .attn_k = square("attn_k"), .attn_v = square("attn_v"),
            .attn_out = square("attn_out"),
            .attn_q_b = bias("attn_q", n_embd), .attn_k_b = bias("attn_k", n_embd), .attn_v_b = bias("attn_v", n_embd),
            .attn_out_b = bias("attn_out", n_embd),
            .ffn_gate = loader.load_optional(name("ffn_gate", "weight"), {n_embd, n_ff}),
            .ffn_up = loader.load(name("ffn_up", "weight"), {n_embd, n_ff}),
            .ffn_down = loader.load(name("ffn_down", "weight"), {n_ff, n_embd}),
            .ffn_up_b = bias("ffn_up", n_ff), .ffn_down_b = bias("ffn_down", n_embd),
        });
    }
    if (hp.projector == ProjectorType::Gemma3) {
        w.soft_emb_norm = loader.load("mm.soft_emb_norm.weight", {n_embd});
        const gguf::Tensor& projection = file.tensor("mm.input_projection.weight");
        if (projection.ne != std::array<uint64_t, 4>{n_text, n_embd, 1, 1})
            fail("{}: tensor 'mm.input_projection.weight' has shape {}, expected {} x {}", file.name(),
                 projection.shape_string(), n_text, n_embd);
        w.input_projection = load_transposed(device, projection);
    } else {
        const uint64_t m = hp.n_merge;
        w.input_norm = vec("mm.input_norm.weight");
        if (m > 1) w.patch_merger = loader.load("mm.patch_merger.weight", {n_embd * m * m, n_embd});
        w.mm_1 = loader.load("mm.1.weight", {n_embd, n_text});
        w.mm_1_b = loader.load_optional("mm.1.bias", {n_text});
        w.mm_2 = loader.load("mm.2.weight", {n_text, n_text});
        w.mm_2_b = loader.load_optional("mm.2.bias", {n_text});
        w.img_break = loader.load_optional("v.token_embd.img_break", {n_text});
    }
    loader.finish();
    return w;
}

}  // namespace vkllm::vision
