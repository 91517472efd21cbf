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

#include "tokenizer/tokenizer.h"
#include "vision/clip.h"

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

}  // namespace vkllm::vision
