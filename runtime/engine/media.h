#pragma once
// Prompts with images: the text tokenized around its media markers (vision/prompt.h), each image
// encoded once by the engine's encoder and its embeddings run in place of the marker.
#include <span>
#include <string_view>
#include <vector>

#include "engine/engine.h"
#include "vision/image.h"
#include "vision/prompt.h"

namespace vkllm::engine {

// Runs the prompt through the session from its current position: text with every token's logits,
// images in order at the markers. Throws when the engine has no image encoder.
vision::PromptRun run_prompt_with_images(Engine& engine, std::string_view prompt, std::span<const vision::Image> images);

// The logits after a run's last position; throws when the prompt ended in an image (no text logits).
std::vector<float> logits_to_continue(const vision::PromptRun& run, uint32_t n_vocab);

}  // namespace vkllm::engine
