#pragma once
// Images in prompts for the model commands: --mmproj and --image, and a prompt's text and images
// run through the session in order (runtime/vision).
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "model_options.h"
#include "vision/encoder.h"
#include "vision/prompt.h"

namespace vkllm::cli {

struct MediaOptions {
    std::string mmproj_path;
    std::vector<std::string> image_paths;

    bool parse(Args args, size_t& i);
    bool active() const { return !mmproj_path.empty() || !image_paths.empty(); }
    static constexpr const char* usage = "--mmproj MMPROJ --image FILE [--image FILE...]";
};

// The encoder of --mmproj on the loaded model's device, and the images of --image.
struct LoadedMedia {
    gguf::File mmproj;
    std::unique_ptr<vision::Encoder> encoder;
    std::vector<vision::Image> images;

    LoadedMedia(LoadedModel& loaded, const MediaOptions& options);
    // Tokenizes the prompt around its media markers and runs it: text chunks with every token's
    // logits, images encoded (once each) and their embeddings in place of the marker.
    vision::PromptRun evaluate(LoadedModel& loaded, std::string_view prompt);
};

// The logits after a run's last position; throws when the prompt ended in an image (no text logits).
std::vector<float> logits_to_continue(const vision::PromptRun& run, uint32_t n_vocab);

// The prompt of `vkllm run` with its images: evaluated, the text tokens returned (a sampler's
// history) and the logits after the last position in `logits`.
std::vector<int32_t> prefill_with_media(LoadedModel& loaded, const MediaOptions& options, std::string_view prompt,
                                        std::vector<float>& logits);

// vkllm eval with --mmproj: the text and image positions of a prompt (eval.cpp hands it over).
int eval_with_media(Args args);

}  // namespace vkllm::cli
