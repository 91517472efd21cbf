// vkllm eval -m MODEL --mmproj MMPROJ --image FILE -p TEXT --logits-out F [--embd-out F] [--layout-out F]:
// the prompt tokenized around <__media__> as llama.cpp's mtmd does; writes the logits of every text
// position (f32 [text tokens][n_vocab]), the projector's output (f32 [image tokens][n_embd]) and the
// position / kind / token / logits-row table.
#include "media.h"

#include <cstdio>
#include <fstream>

#include "core/error.h"
#include "engine/media.h"

namespace vkllm::cli {
namespace {

void write_floats(const std::string& path, const std::vector<float>& values) {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(values.data()), std::streamsize(values.size() * sizeof(float)));
    if (!out) fail("cannot write {}", path);
}

void write_layout(const std::string& path, const std::vector<vision::LayoutEntry>& layout) {
    std::ofstream out(path);
    for (const vision::LayoutEntry& e : layout) out << e.position << (e.image ? " I " : " T ") << e.token << ' ' << e.logits_row << '\n';
    if (!out) fail("cannot write {}", path);
}

}  // namespace

void MediaOptions::declare(Options& options) {
    options.section("images")
        .add("--mmproj", mmproj_path, "FILE", "the model's vision projector (an mmproj GGUF)")
        .add("--image", image_paths, "FILE", "an image for the prompt, at its <__media__> marker or before the text");
}

void MediaOptions::check() const {
    if (!image_paths.empty() && mmproj_path.empty())
        fail("--image {} needs --mmproj FILE, the vision projector GGUF that goes with the model", image_paths.front());
    if (!mmproj_path.empty() && image_paths.empty()) fail("--mmproj {} needs at least one --image FILE", mmproj_path);
}

std::vector<vision::Image> load_images(const MediaOptions& options) {
    if (options.mmproj_path.empty() || options.image_paths.empty()) fail("images need both --mmproj and --image");
    std::vector<vision::Image> images;
    for (const std::string& path : options.image_paths) images.push_back(vision::load_image(path));
    return images;
}

int eval_with_media(const ModelOptions& options, const MediaOptions& media, const MediaEvalOutputs& eval) {
    const std::string& prompt = eval.prompt;
    const std::string &logits_path = eval.logits_path, &embd_path = eval.embd_path, &layout_path = eval.layout_path;
    const std::vector<vision::Image> images = load_images(media);
    std::unique_ptr<engine::Engine> engine = open_engine(options, media.mmproj_path);
    vision::PromptRun result = engine::run_prompt_with_images(*engine, prompt, images);
    write_floats(logits_path, result.text_logits);
    if (!embd_path.empty()) write_floats(embd_path, result.image_embd);
    if (!layout_path.empty()) write_layout(layout_path, result.layout);
    std::fprintf(stderr, "wrote %zu x %u logits to %s; %zu image embeddings encoded in %.1f ms\n",
                 result.text_tokens.size(), engine->info().n_vocab, logits_path.c_str(),
                 result.image_embd.size() / engine->info().n_embd, result.encode_ms);
    if (options.verbose) {
        const vision::EncodeStats& stats = engine->encoder()->last_stats();
        std::fprintf(stderr, "encoder: %.2f MiB of weights, %.2f MiB of activations and %.2f MiB of inputs and outputs "
                     "for the last image's grid\n", engine->encoder()->weight_bytes() / 1048576.0,
                     stats.transient_bytes / 1048576.0, stats.input_bytes / 1048576.0);
    }
    write_reports(options, *engine);
    return 0;
}

}  // namespace vkllm::cli
