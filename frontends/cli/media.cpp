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

constexpr const char* eval_media_usage =
    "usage: vkllm eval {} {} -p TEXT --logits-out FILE [--embd-out FILE] [--layout-out FILE]";

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

bool MediaOptions::parse(Args args, size_t& i) {
    if (i + 1 >= args.size()) return false;
    if (args[i] == "--mmproj") mmproj_path = args[++i];
    else if (args[i] == "--image") image_paths.emplace_back(args[++i]);
    else return false;
    return true;
}

std::vector<vision::Image> load_images(const MediaOptions& options) {
    if (options.mmproj_path.empty() || options.image_paths.empty()) fail("images need both --mmproj and --image");
    std::vector<vision::Image> images;
    for (const std::string& path : options.image_paths) images.push_back(vision::load_image(path));
    return images;
}

int eval_with_media(Args args) {
    ModelOptions options;
    MediaOptions media;
    std::string prompt, logits_path, embd_path, layout_path;
    for (size_t i = 0; i < args.size(); ++i) {
        if (options.parse(args, i) || media.parse(args, i)) continue;
        if ((args[i] == "-p" || args[i] == "--prompt") && i + 1 < args.size()) prompt = args[++i];
        else if (args[i] == "--logits-out" && i + 1 < args.size()) logits_path = args[++i];
        else if (args[i] == "--embd-out" && i + 1 < args.size()) embd_path = args[++i];
        else if (args[i] == "--layout-out" && i + 1 < args.size()) layout_path = args[++i];
        else fail("unexpected argument '{}'; {}", args[i], fmt::format(eval_media_usage, ModelOptions::usage, MediaOptions::usage));
    }
    if (options.model_path.empty() || logits_path.empty())
        fail(eval_media_usage, ModelOptions::usage, MediaOptions::usage);

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
