#pragma once
// Images in prompts for the model commands: --mmproj and --image (engine/media.h runs them).
#include <string>
#include <vector>

#include "commands.h"
#include "model_options.h"
#include "vision/image.h"

namespace vkllm::cli {

struct MediaOptions {
    std::string mmproj_path;
    std::vector<std::string> image_paths;

    void declare(Options& options);
    void check() const;  // both or neither of --mmproj and --image
    bool active() const { return !mmproj_path.empty() || !image_paths.empty(); }
};

// The images of --image, decoded; throws unless both --mmproj and --image were given.
std::vector<vision::Image> load_images(const MediaOptions& options);

// vkllm eval with --mmproj: the text and image positions of a prompt (eval.cpp parses, then hands over).
struct MediaEvalOutputs {
    std::string prompt, logits_path, embd_path, layout_path;
};
int eval_with_media(const ModelOptions& options, const MediaOptions& media, const MediaEvalOutputs& eval);

}  // namespace vkllm::cli
