#pragma once
// Prompts with images, tokenized as llama.cpp's mtmd_tokenize does: each media marker becomes the
// projector's wrapping (Gemma 3: <start_of_image> marker <end_of_image>; Pixtral: marker [IMG_END]),
// the text between markers is tokenized chunk by chunk (special tokens parsed, BOS only before the
// first chunk), and each marker's place is taken by one image's embeddings.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/session.h"
#include "tokenizer/tokenizer.h"
#include "vision/clip.h"
#include "vision/encoder.h"

namespace vkllm::vision {

constexpr std::string_view media_marker = "<__media__>";

// One chunk: text tokens, or the index of the image whose embeddings it holds.
struct PromptChunk {
    std::vector<int32_t> tokens;
    int image = -1;
};

// Throws vkllm::Error when the markers and images differ in number.
std::vector<PromptChunk> tokenize_with_media(const tokenizer::Tokenizer& tokenizer, ProjectorType projector,
                                             std::string_view prompt, size_t n_images);

// One position of an evaluated prompt: a text token with its row of logits, or an image slot.
struct LayoutEntry {
    uint32_t position = 0;
    bool image = false;
    int32_t token = 0;  // text: the token id; image: the slot's index within its image
    int32_t logits_row = -1;
};

struct PromptRun {
    std::vector<int32_t> text_tokens;  // every text token, in order (a sampler's history)
    std::vector<float> text_logits;    // [text tokens][n_vocab]
    std::vector<float> image_embd;     // every image's embeddings, in order
    std::vector<LayoutEntry> layout;
    double encode_ms = 0;              // encoder time, all images
};

// Runs the chunks through sequence seq of the session from its position: text with every token's logits,
// images encoded (once per distinct image) with their embeddings in place of the marker.
PromptRun run_prompt(model::Session& session, Encoder& encoder, std::span<const PromptChunk> chunks,
                     std::span<const Image> images, uint32_t seq = 0);

}  // namespace vkllm::vision
