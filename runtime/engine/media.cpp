#include "engine/media.h"

#include "core/error.h"

namespace vkllm::engine {

vision::PromptRun run_prompt_with_images(Engine& engine, std::string_view prompt, std::span<const vision::Image> images) {
    vision::Encoder* encoder = engine.encoder();
    if (!encoder) fail("images need the model's image encoder: give its mmproj file with --mmproj");
    const std::vector<vision::PromptChunk> chunks =
        vision::tokenize_with_media(engine.tokenizer(), encoder->hparams().projector, prompt, images.size());
    return vision::run_prompt(engine.session(), *encoder, chunks, images);
}

std::vector<float> logits_to_continue(const vision::PromptRun& run, uint32_t n_vocab) {
    if (run.text_logits.size() < n_vocab) fail("a prompt with images must end in text: the model has no logits to continue from");
    return {run.text_logits.end() - n_vocab, run.text_logits.end()};
}

}  // namespace vkllm::engine
