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

    bool parse(Args args, size_t& i);
    bool active() const { return !mmproj_path.empty() || !image_paths.empty(); }
    static constexpr const char* usage = "--mmproj MMPROJ --image FILE [--image FILE...]";
};

// The images of --image, decoded; throws unless both --mmproj and --image were given.
std::vector<vision::Image> load_images(const MediaOptions& options);

// vkllm eval with --mmproj: the text and image positions of a prompt (eval.cpp hands it over).
int eval_with_media(Args args);

}  // namespace vkllm::cli
