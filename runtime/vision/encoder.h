#pragma once
// A vision encoder from an mmproj GGUF: preprocesses an image as llama.cpp's mtmd does, runs the
// ViT and the projector on the GPU as one baked graph per patch grid, and returns the embeddings
// that replace the image's placeholder positions in the prompt. Each distinct image (by content
// hash) is encoded once.
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "gpu/device.h"
#include "graph/baked.h"
#include "vision/clip.h"
#include "vision/image.h"
#include "vision/preprocess.h"

namespace vkllm::vision {

struct ImageEmbeddings {
    uint32_t n_tokens = 0, n_embd = 0;
    std::vector<float> values;  // [n_tokens][n_embd]
};

struct EncodeStats {
    double milliseconds = 0;    // preprocessing, upload, GPU run and readback of the last encode (0: cached)
    uint64_t transient_bytes = 0;  // the graph's activations (aliased) for the last image's grid
    uint64_t input_bytes = 0;      // patches, positions and output buffers of that grid
};

class Encoder {
public:
    Encoder(gpu::Device& device, const gguf::File& mmproj);
    ~Encoder();
    Encoder(const Encoder&) = delete;
    Encoder& operator=(const Encoder&) = delete;

    const ClipHparams& hparams() const { return hp_; }
    uint64_t weight_bytes() const { return weight_bytes_; }
    // The image as the encoder sees it (resized, letterboxed), and its size.
    Image input_image(const Image& image) const;
    ImageSize input_size(const Image& image) const;
    // Prompt positions the image's embeddings will take, without encoding or resizing it.
    uint32_t positions(const Image& image) const;
    // The projector's output for the image; cached by content hash, valid as long as the Encoder.
    const ImageEmbeddings& encode(const Image& image);
    const EncodeStats& last_stats() const { return stats_; }

private:
    struct Run;
    gpu::Device& device_;
    ClipHparams hp_;
    ClipWeights w_;
    uint64_t weight_bytes_ = 0;
    gpu::Buffer phases_h_, phases_w_;
    std::map<std::pair<uint32_t, uint32_t>, std::unique_ptr<Run>> runs_;  // by patch grid (nx, ny)
    std::map<uint64_t, ImageEmbeddings> cache_;
    EncodeStats stats_;

    Run& run_for(uint32_t nx, uint32_t ny);
};

}  // namespace vkllm::vision
