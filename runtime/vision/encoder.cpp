#include "vision/encoder.h"

#include <chrono>
#include <numeric>

#include "core/error.h"
#include "gpu/transfer.h"
#include "ops/rope.h"
#include "vision/preprocess.h"
#include "vision/vit.h"

namespace vkllm::vision {
namespace {

gpu::Buffer upload_ints(gpu::Device& device, std::span<const int32_t> values) {
    gpu::Buffer buffer = device.allocator().create(values.size_bytes(), gpu::MemoryDomain::DeviceMapped);
    buffer.write(0, std::as_bytes(values));
    return buffer;
}

}  // namespace

// One patch grid's graph and the buffers it reads and writes.
struct Encoder::Run {
    uint32_t nx = 0, ny = 0, n_out = 0;
    gpu::Buffer patches, slots, mask_positions, pos_h, pos_w, output;
    std::unique_ptr<graph::BakedGraph> graph;
};

Encoder::Encoder(gpu::Device& device, const gguf::File& mmproj)
    : device_(device), hp_(read_clip_hparams(mmproj)), w_(load_clip_weights(device, mmproj, hp_)) {
    for (const gguf::Tensor& tensor : mmproj.tensors()) weight_bytes_ += tensor.nbytes;
    if (hp_.projector != ProjectorType::Pixtral) return;
    gpu::Transfer transfer(device);
    std::array<ops::RopeConfig, 2> configs = pixtral_rope_configs(hp_);
    for (auto [config, buffer] : {std::pair{&configs[0], &phases_h_}, {&configs[1], &phases_w_}}) {
        std::vector<uint32_t> phases = ops::rope_phase_table(*config);
        *buffer = device.allocator().create(phases.size() * 4, gpu::MemoryDomain::Device);
        transfer.upload(*buffer, std::span<const uint32_t>(phases));
    }
    transfer.flush();
}

Encoder::~Encoder() = default;

ImageSize Encoder::input_size(const Image& image) const {
    return hp_.projector == ProjectorType::Gemma3 ? gemma3_input_size(hp_) : pixtral_input_size(hp_, image);
}

Image Encoder::input_image(const Image& image) const {
    const ImageSize size = input_size(image);
    return letterbox(image, size.width, size.height, ResizeFilter::Bilinear);
}

uint32_t Encoder::positions(const Image& image) const {
    const ImageSize size = input_size(image);
    return output_tokens(hp_, w_, size.width / hp_.patch_size, size.height / hp_.patch_size);
}

Encoder::Run& Encoder::run_for(uint32_t nx, uint32_t ny) {
    std::unique_ptr<Run>& run = runs_[{nx, ny}];
    if (run) return *run;
    run = std::make_unique<Run>();
    const uint32_t n = nx * ny, p = hp_.patch_size;
    gpu::Allocator& allocator = device_.allocator();
    run->nx = nx;
    run->ny = ny;
    run->n_out = output_tokens(hp_, w_, nx, ny);
    run->patches = allocator.create(uint64_t(n) * 3 * p * p * sizeof(float), gpu::MemoryDomain::DeviceMapped);
    run->output = allocator.create(uint64_t(run->n_out) * hp_.projection_dim * sizeof(float), gpu::MemoryDomain::DeviceMapped);
    std::vector<int32_t> slots(n), rows(n), columns(n), last(n, int32_t(n - 1));
    std::iota(slots.begin(), slots.end(), 0);
    for (uint32_t i = 0; i < n; ++i) rows[i] = int32_t(i / nx), columns[i] = int32_t(i % nx);
    run->slots = upload_ints(device_, slots);
    run->mask_positions = upload_ints(device_, last);
    run->pos_h = upload_ints(device_, rows);
    run->pos_w = upload_ints(device_, columns);

    graph::Graph g(device_);
    VitInputs in{nx, ny, g.persistent("v.inp_patches", run->patches.range()), g.persistent("v.slots", run->slots.range()),
                 g.persistent("v.mask_positions", run->mask_positions.range()), g.persistent("v.pos_h", run->pos_h.range()),
                 g.persistent("v.pos_w", run->pos_w.range()), {}, {}};
    if (hp_.projector == ProjectorType::Pixtral) {
        in.phases_h = g.persistent("v.rope_phases_h", phases_h_.range());
        in.phases_w = g.persistent("v.rope_phases_w", phases_w_.range());
    }
    const model::StepInputs no_step{};
    model::blocks::Builder b{g, device_, no_step, {n, true}};
    graph::Region x = build_vit(b, hp_, w_, in);
    graph::Region out = g.persistent("mm.output", run->output.range());
    if (hp_.projector == ProjectorType::Gemma3) build_gemma3_projector(b, hp_, w_, x, nx, ny, out);
    else build_pixtral_projector(b, hp_, w_, x, nx, ny, out);
    run->graph = std::make_unique<graph::BakedGraph>(std::move(g).bake());
    return *run;
}

const ImageEmbeddings& Encoder::encode(const Image& image) {
    const uint64_t key = content_hash(image);
    if (auto cached = cache_.find(key); cached != cache_.end()) {
        stats_.milliseconds = 0;
        return cached->second;
    }
    const auto start = std::chrono::steady_clock::now();
    const Image input = input_image(image);
    const uint32_t p = hp_.patch_size;
    if (input.width % p || input.height % p)
        fail("the encoder input of {} x {} pixels is not a whole number of {}-pixel patches", input.width, input.height, p);
    // ggml's im2col writes in the kernel's type: an F16 kernel sees f16-rounded pixels.
    const std::vector<float> patches = unfold_patches(normalize(input, hp_.image_mean, hp_.image_std), input.width,
                                                      input.height, p, w_.patch_embd.type == gguf::GgmlType::F16);
    Run& run = run_for(input.width / p, input.height / p);
    run.patches.write(0, std::as_bytes(std::span(patches)));
    run.graph->replay();
    ImageEmbeddings& result = cache_[key];
    result = {run.n_out, hp_.projection_dim, std::vector<float>(uint64_t(run.n_out) * hp_.projection_dim)};
    run.output.read(0, std::as_writable_bytes(std::span(result.values)));
    stats_ = {std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count(),
              run.graph->stats().transient_bytes_aliased,
              run.patches.size() + run.output.size() + 4 * run.slots.size()};
    return result;
}

}  // namespace vkllm::vision
