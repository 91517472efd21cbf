#include "engine/engine.h"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "core/error.h"
#include "core/file.h"
#include "ops/attention_config.h"
#include "sampling/vocab_table.h"

namespace vkllm::engine {
namespace {

// ChatML, what llama.cpp renders for a model without a template of its own.
constexpr const char* chatml_template =
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

// Weights and KV cache against what the device can hold, before anything is uploaded.
void check_memory(const gpu::Capabilities& caps, const EngineOptions& options, const gguf::File& file,
                  const model::KvLayout& layout, uint32_t n_ctx) {
    const uint64_t weights = model::weight_bytes(file);
    const uint64_t kv = options.n_seq * model::kv_cache_bytes(layout, n_ctx, model::SessionOptions{}.n_ubatch, options.kv_type);
    const uint64_t budget = caps.memory_budget;
    const std::string profile = caps.profile.empty() ? "" : " under VKLLM_DEVICE_PROFILE=" + caps.profile;
    if (weights + kv > budget)
        fail("{}: the weights ({} MiB) and a KV cache of {} x {} tokens ({} MiB) need {} MiB more memory than '{}'{} has "
             "({} MiB); lower -c or use a smaller quantization", options.model_path, weights >> 20, options.n_seq, n_ctx,
             kv >> 20, (weights + kv - budget) >> 20, caps.name, profile, budget >> 20);
}

// Each layer's K and V caches are bound whole: a context whose cache outgrows one binding is refused
// here, naming the context, rather than as a buffer of some size the device cannot bind.
void check_binding_range(gpu::Device& device, const EngineOptions& options, const model::KvLayout& layout,
                         uint32_t n_ctx) {
    const uint64_t range = device.allocator().max_binding_range();
    const uint32_t n_ubatch = model::SessionOptions{}.n_ubatch;
    for (const model::KvLayerLayout& layer : layout.layers) {
        const uint32_t row = std::max(layer.k_row, layer.v_row);
        // Every sequence's cells of a layer sit in one buffer.
        const uint64_t bytes =
            options.n_seq * ops::kv_cache_bytes(options.kv_type, model::kv_layer_cells(layer, n_ctx, n_ubatch), row);
        if (bytes <= range) continue;
        const uint64_t per_token = options.n_seq * ops::kv_cache_bytes(options.kv_type, 1, row);
        const std::string sequences = options.n_seq > 1 ? fmt::format(" for each of {} sequences", options.n_seq) : "";
        fail("a context of {} tokens{} needs KV caches of {} MiB per layer, more than '{}' binds at once ({} MiB); "
             "lower -c to at most {}", n_ctx, sequences, bytes >> 20, device.caps().name, range >> 20, range / per_token);
    }
}

// A vision projector given as the model fails here, by what it is, not at the first key it lacks.
const gguf::File& language_model(const gguf::File& file) {
    if (file.get_string("general.architecture") == "clip")
        fail("{} is a vision projector (mmproj), not a language model: give it with --mmproj and the model with -m",
             file.name());
    return file;
}

}  // namespace

Engine::Engine(const EngineOptions& options)
    : options_(options),
      device_(instance_, options.device),
      file_(gguf::File::open(options.model_path)),
      tokenizer_(tokenizer::from_gguf(language_model(file_))) {
    const auto started = std::chrono::steady_clock::now();
    model::LoadOptions load{.progress = options.progress};
    uint32_t n_ctx = options.n_ctx;
    load.before_upload = [&](const model::ModelInfo& info, const model::KvLayout& layout) {
        if (!n_ctx) n_ctx = model::default_n_ctx(info);
        check_memory(device_.caps(), options, file_, layout, n_ctx);
        check_binding_range(device_, options, layout, n_ctx);
    };
    model_ = model::load_model(device_, file_, load);
    session_ = std::make_unique<model::Session>(device_, *model_,
                                                model::SessionOptions{.n_ctx = n_ctx, .n_seq = options.n_seq, .kv_type = options.kv_type});
    session_->prepare();
    load_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

    tokenizer::Vocab vocab = tokenizer_.vocab();
    std::string template_name = options.model_path;
    if (!options.chat_template_path.empty()) {
        vocab.chat_template = read_text_file(options.chat_template_path, "chat template");
        template_name = options.chat_template_path;
    } else if (vocab.chat_template.empty()) {
        vocab.chat_template = chatml_template;
        template_name = "ChatML (the model has no chat template)";
        chat_template_fallback_ = true;
        const tokenizer::TokenId end_of_turn = tokenizer_.find("<|im_end|>");
        if (end_of_turn == tokenizer::no_token) template_stops_.strings.push_back("<|im_end|>");
        else if (!tokenizer_.is_eog(end_of_turn)) template_stops_.tokens.push_back(end_of_turn);
    }
    chat_template_.emplace(vocab, template_name);

    if (!options.mmproj_path.empty()) {
        mmproj_.emplace(gguf::File::open(options.mmproj_path));
        encoder_ = std::make_unique<vision::Encoder>(device_, *mmproj_);
        if (encoder_->hparams().projection_dim != info().n_embd)
            fail("{}: the projector writes embeddings of {} values, the model takes {}", options.mmproj_path,
                 encoder_->hparams().projection_dim, info().n_embd);
    }
}

Engine::~Engine() = default;

std::shared_ptr<const sampling::TokenTable> Engine::token_table() const {
    std::call_once(token_table_once_, [this] { token_table_ = sampling::vocab_token_table(tokenizer_); });
    return token_table_;
}

}  // namespace vkllm::engine
