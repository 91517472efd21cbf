#include "vision/prompt.h"

#include "core/error.h"

namespace vkllm::vision {
namespace {

std::string wrapped_marker(ProjectorType projector) {
    const std::string marker(media_marker);
    return projector == ProjectorType::Gemma3 ? "<start_of_image>" + marker + "<end_of_image>" : marker + "[IMG_END]";
}

}  // namespace

std::vector<PromptChunk> tokenize_with_media(const tokenizer::Tokenizer& tokenizer, ProjectorType projector,
                                             std::string_view prompt, size_t n_images) {
    std::string text;
    size_t n_markers = 0;
    for (size_t at = 0;;) {
        const size_t found = prompt.find(media_marker, at);
        text += prompt.substr(at, found - at);
        if (found == std::string_view::npos) break;
        text += wrapped_marker(projector);
        at = found + media_marker.size();
        ++n_markers;
    }
    if (n_markers != n_images)
        fail("the prompt has {} media markers ({}) for {} images", n_markers, media_marker, n_images);
    std::vector<PromptChunk> chunks;
    int image = 0;
    for (size_t at = 0;;) {
        const size_t found = text.find(media_marker, at);
        const std::string_view part = std::string_view(text).substr(at, found - at);
        std::vector<int32_t> tokens = tokenizer.tokenize(part, /*add_special=*/at == 0, /*parse_special=*/true);
        if (!tokens.empty()) chunks.push_back({std::move(tokens), -1});
        if (found == std::string::npos) break;
        chunks.push_back({{}, image++});
        at = found + media_marker.size();
    }
    return chunks;
}

PromptRun run_prompt(model::Session& session, Encoder& encoder, std::span<const PromptChunk> chunks,
                     std::span<const Image> images, uint32_t seq) {
    PromptRun run;
    for (const PromptChunk& chunk : chunks) {
        const uint32_t start = session.n_past(seq);
        if (chunk.image < 0) {
            const auto first_row = int32_t(run.text_tokens.size());
            session.eval(seq, chunk.tokens, &run.text_logits);
            for (size_t t = 0; t < chunk.tokens.size(); ++t)
                run.layout.push_back({start + uint32_t(t), false, chunk.tokens[t], first_row + int32_t(t)});
            run.text_tokens.insert(run.text_tokens.end(), chunk.tokens.begin(), chunk.tokens.end());
            continue;
        }
        const ImageEmbeddings& embd = encoder.encode(images[size_t(chunk.image)]);
        run.encode_ms += encoder.last_stats().milliseconds;
        session.eval_embeddings(seq, embd.values);
        for (uint32_t t = 0; t < embd.n_tokens; ++t) run.layout.push_back({start + t, true, int32_t(t), -1});
        run.image_embd.insert(run.image_embd.end(), embd.values.begin(), embd.values.end());
    }
    return run;
}

}  // namespace vkllm::vision
