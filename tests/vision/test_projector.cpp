// Gemma 3's pooling projector on an mmproj written here (the fixture's tiny projector does not pool),
// against the C++ reference; and a quantized encoder against its F16 original.
#include <doctest/doctest.h>

#include <cmath>

#include "fixture_check.h"
#include "gguf/quants.h"
#include "gguf/writer.h"
#include "gpu_fixture.h"
#include "graph/baked.h"
#include "ops/ref/rmsnorm_ref.h"
#include "ops/ref/vision_ref.h"
#include "vision/encoder.h"
#include "vision/vit.h"

using namespace vkllm;

namespace {

constexpr uint32_t n_embd = 32, n_ff = 64, n_text = 48, image_size = 32, patch = 2, pool = 4;

void add_random(gguf::Writer& out, const std::string& name, gguf::GgmlType type, std::vector<uint64_t> ne,
                uint64_t seed) {
    uint64_t count = 1;
    for (uint64_t d : ne) count *= d;
    const std::vector<float> values = test::random_floats(count, seed, -0.5f, 0.5f);
    out.add_tensor(name, type, ne, gguf::quantize(type, values));
}

// A SigLIP mmproj of one block with a 4x4 pool: 16 x 16 patches become 4 x 4 tokens.
gguf::File pooled_gemma3_mmproj() {
    gguf::Writer out;
    out.add_string("general.architecture", "clip");
    out.add_string("clip.projector_type", "gemma3");
    out.add_bool("clip.has_vision_encoder", true);
    out.add_bool("clip.use_gelu", true);
    for (auto [key, value] : {std::pair{"embedding_length", n_embd}, {"feed_forward_length", n_ff}, {"block_count", 1u},
                              {"attention.head_count", 2u}, {"image_size", image_size}, {"patch_size", patch},
                              {"projection_dim", n_text}, {"projector.scale_factor", pool}})
        out.add_u32(std::string("clip.vision.") + key, value);
    out.add_f32("clip.vision.attention.layer_norm_epsilon", 1e-6f);
    const std::vector<float> half = {0.5f, 0.5f, 0.5f};
    out.add_array<float>("clip.vision.image_mean", half);
    out.add_array<float>("clip.vision.image_std", half);
    using enum gguf::GgmlType;
    const uint64_t grid = image_size / patch, e = n_embd;
    uint64_t seed = 7000;
    add_random(out, "v.patch_embd.weight", F32, {patch, patch, 3, e}, ++seed);
    add_random(out, "v.patch_embd.bias", F32, {e}, ++seed);
    add_random(out, "v.position_embd.weight", F32, {e, grid * grid}, ++seed);
    for (const char* norm : {"ln1", "ln2"}) {
        add_random(out, std::string("v.blk.0.") + norm + ".weight", F32, {e}, ++seed);
        add_random(out, std::string("v.blk.0.") + norm + ".bias", F32, {e}, ++seed);
    }
    for (const char* proj : {"attn_q", "attn_k", "attn_v", "attn_out"}) {
        add_random(out, std::string("v.blk.0.") + proj + ".weight", Q8_0, {e, e}, ++seed);
        add_random(out, std::string("v.blk.0.") + proj + ".bias", F32, {e}, ++seed);
    }
    add_random(out, "v.blk.0.ffn_up.weight", Q8_0, {e, n_ff}, ++seed);
    add_random(out, "v.blk.0.ffn_up.bias", F32, {n_ff}, ++seed);
    add_random(out, "v.blk.0.ffn_down.weight", Q8_0, {n_ff, e}, ++seed);
    add_random(out, "v.blk.0.ffn_down.bias", F32, {e}, ++seed);
    add_random(out, "v.post_ln.weight", F32, {e}, ++seed);
    add_random(out, "v.post_ln.bias", F32, {e}, ++seed);
    add_random(out, "mm.soft_emb_norm.weight", F32, {e}, ++seed);
    add_random(out, "mm.input_projection.weight", F16, {n_text, e}, ++seed);
    return gguf::File::from_bytes(out.bytes(), "pooled-gemma3.gguf");
}

// pool -> RMSNorm * soft_emb_norm -> x · input_projection (stored {n_text, n_embd}, used transposed).
std::vector<float> reference_projector(const gguf::File& file, std::span<const float> x, uint32_t grid) {
    const std::vector<float> pooled = ref::avg_pool_2d(x, n_embd, grid, grid, pool);
    const std::vector<float> norm = gguf::dequantize(file.tensor("mm.soft_emb_norm.weight"));
    const std::vector<float> w = gguf::dequantize(file.tensor("mm.input_projection.weight"));
    std::vector<float> normed(pooled.size()), out(pooled.size() / n_embd * n_text);
    ref::rmsnorm(pooled, norm, n_embd, 1e-6f, normed);
    for (size_t t = 0; t < pooled.size() / n_embd; ++t)
        for (uint32_t c = 0; c < n_text; ++c) {
            double sum = 0;
            for (uint32_t i = 0; i < n_embd; ++i) sum += double(w[c + i * n_text]) * normed[t * n_embd + i];
            out[t * n_text + c] = float(sum);
        }
    return out;
}

}  // namespace

TEST_CASE("Gemma 3 projector with a 4x4 average pool matches the C++ reference") {
    const gguf::File file = pooled_gemma3_mmproj();
    const vision::ClipHparams hp = vision::read_clip_hparams(file);
    REQUIRE(hp.pool_kernel == pool);
    const vision::ClipWeights w = vision::load_clip_weights(test::device(), file, hp);
    const uint32_t grid = image_size / patch, n_out = (grid / pool) * (grid / pool);
    constexpr uint64_t seed = 7100;
    const std::vector<float> x = test::random_floats(uint64_t(grid) * grid * n_embd, seed, -2.0f, 2.0f);
    gpu::Buffer x_buffer = test::upload(x), out_buffer = test::upload(std::vector<float>(uint64_t(n_out) * n_text));

    graph::Graph g(test::device());
    const model::StepInputs no_step{};
    model::blocks::Builder b{g, test::device(), no_step, {grid * grid, true}};
    vision::build_gemma3_projector(b, hp, w, g.persistent("x", x_buffer.range()), grid, grid,
                                   g.persistent("out", out_buffer.range()));
    graph::BakedGraph baked = std::move(g).bake();
    baked.replay();
    const double error = test::relative_error(test::download(out_buffer, uint64_t(n_out) * n_text),
                                              reference_projector(file, x, grid));
    CAPTURE(seed);
    CHECK(error <= 1e-5);

    // The whole encoder on it: 16 x 16 patches pooled to 4 x 4 tokens.
    vision::Encoder encoder(test::device(), file);
    vision::Image image{40, 24, std::vector<uint8_t>(40 * 24 * 3)};
    for (size_t i = 0; i < image.rgb.size(); ++i) image.rgb[i] = uint8_t(i * 7);
    const vision::ImageEmbeddings& embd = encoder.encode(image);
    CHECK(embd.n_tokens == n_out);
    CHECK(std::isfinite(test::relative_error(embd.values, std::vector<float>(embd.values.size(), 1.0f))));
}

namespace {

// The mmproj with its F16 matrices re-encoded in `type` (the patch kernel stays F16: 588 columns);
// with as_f32, those values written as F32 instead (exactly).
gguf::File requantized(const gguf::File& file, gguf::GgmlType type, bool as_f32) {
    gguf::Writer out;
    for (const gguf::KeyValue& kv : file.metadata()) out.add_value(kv.key, kv.value);
    for (const gguf::Tensor& t : file.tensors()) {
        const std::vector<uint64_t> ne(t.ne.begin(), t.ne.begin() + t.n_dims);
        if (t.type != gguf::GgmlType::F16 || t.name == "v.patch_embd.weight") {
            out.add_tensor(t.name, t.type, ne, std::vector<std::byte>(t.data.begin(), t.data.end()));
            continue;
        }
        const std::vector<std::byte> blocks = gguf::quantize(type, gguf::dequantize(t));
        std::vector<float> values(t.n_elements());
        gguf::dequantize(type, blocks, values);
        out.add_tensor(t.name, as_f32 ? gguf::GgmlType::F32 : type, ne, as_f32 ? gguf::quantize(gguf::GgmlType::F32, values) : blocks);
    }
    return gguf::File::from_bytes(out.bytes(), std::string(file.name()) + " (requantized)");
}

std::vector<float> encode(const gguf::File& mmproj, const vision::Image& image, uint64_t* weight_bytes = nullptr) {
    vision::Encoder encoder(test::device(), mmproj);
    if (weight_bytes) *weight_bytes = encoder.weight_bytes();
    return encoder.encode(image).values;
}

}  // namespace

TEST_CASE("Pixtral encoder with Q8_0 and Q4_0 weights: exact to its dequantized weights, close to F16") {
    auto dir = test::fixture_dir("vision/pixtral_vis");
    if (dir.empty()) return;
    const gguf::File f16 = gguf::File::open(dir / "mmproj.gguf");
    // A corner of the fixture's image, 112 x 84 pixels: 8 x 6 patches, 12 merged tokens.
    const vision::Image photo = vision::load_image(dir / "chelsea.png");
    vision::Image image{112, 84, {}};
    for (uint32_t y = 0; y < image.height; ++y)
        image.rgb.insert(image.rgb.end(), photo.rgb.begin() + int64_t(y) * photo.width * 3,
                         photo.rgb.begin() + (int64_t(y) * photo.width + image.width) * 3);
    uint64_t f16_bytes = 0, bytes = 0;
    const std::vector<float> original = encode(f16, image, &f16_bytes);
    // Random weights pass the quantization error through every layer: the distance to F16 is only
    // bounded loosely; the kernels are checked against the same values held in F32.
    for (auto [type, distance] : {std::pair{gguf::GgmlType::Q8_0, 3e-2}, std::pair{gguf::GgmlType::Q4_0, 0.4}}) {
        const std::string name(gguf::type_name(type));
        CAPTURE(name);
        const std::vector<float> quantized = encode(requantized(f16, type, false), image, &bytes);
        const std::vector<float> same_values = encode(requantized(f16, type, true), image);
        const double error = test::relative_error(quantized, original);
        MESSAGE("Pixtral encoder in " << name << ": relative RMS " << error << " against F16; " << bytes
                                      << " bytes of weights (F16: " << f16_bytes << ")");
        CHECK(test::relative_error(quantized, same_values) <= 1e-4);
        CHECK(error <= distance);
    }
}
