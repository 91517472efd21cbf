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
      file_(gguf::File::open(options.model_path, options.mmap ? gguf::ReadMode::Map : gguf::ReadMode::Read)),
      tokenizer_(tokenizer::from_gguf(language_model(file_))) {
    model::LoadOptions load{
        .progress = options.progress,
        .placement = {.in_host_memory = [this](std::string_view tensor) { return plan_.in_host_memory(tensor); },
                      .lock = options.mlock}};
    // The plan, before anything is allocated: it picks the context and where each weight goes.
    load.before_upload = [&](const model::ModelInfo&, const model::KvLayout& layout) {
        const model::MemoryRequest request{.n_ctx = options.n_ctx, .n_seq = options.n_seq, .kv_type = options.kv_type};
        plan_ = model::plan_memory(file_, layout, request,
                                   model::MemoryBudget::of(device_.caps(), device_.allocator().max_binding_range()));
    };
    model_ = model::load_model(device_, file_, load);
    session_ = std::make_unique<model::Session>(
        device_, *model_, model::SessionOptions{.n_ctx = plan_.n_ctx, .n_seq = options.n_seq, .kv_type = options.kv_type});
    session_->prepare();
    load_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();

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
