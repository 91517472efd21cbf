#pragma once
// An opened model: what every frontend (run, chat, eval, perplexity, bench, serve) starts from. The
// device, the GGUF file (tensors are views into its mapping), the weights on the GPU, the tokenizer,
// one session of n_seq sequences, the chat template and, with an mmproj, the image encoder. Weights, the KV cache
// and compute buffers are planned against the device's memory before anything is uploaded (model/memory_plan.h).
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "chat/prompt.h"
#include "engine/generation.h"
#include "gguf/reader.h"
#include "gpu/device.h"
#include "model/memory_plan.h"
#include "model/session.h"
#include "model/weights.h"
#include "sampling/token_table.h"
#include "tokenizer/tokenizer.h"
#include "vision/encoder.h"

namespace vkllm::engine {

struct EngineOptions {
    std::string model_path;
    std::optional<std::string> device;  // index or part of a name; none: the best device
    uint32_t n_ctx = 0;                 // tokens the KV cache holds per sequence; 0: the training context, at most 4096
    uint32_t n_seq = 1;                 // sequences the session holds (the server's parallel requests)
    ops::KvType kv_type = ops::KvType::F16;
    std::string mmproj_path;            // an image encoder (Gemma 3 SigLIP, Pixtral); empty: none
    std::string chat_template_path;     // a Jinja file replacing the model's template; empty: the model's
    model::WeightLoader::Progress progress;  // called as weights upload (bytes done, total)
    bool mmap = true;                   // false: the file is read into memory (--no-mmap)
    bool mlock = false;                 // the weights locked in RAM (--mlock; model::WeightPlacement::lock)
};

class Engine {
public:
    explicit Engine(const EngineOptions& options);
    ~Engine();
    Engine(const Engine&) = delete;
    Engine& operator=(const Engine&) = delete;

    const EngineOptions& options() const { return options_; }
    gpu::Device& device() { return device_; }
    const gguf::File& file() const { return file_; }
    const model::Model& model() const { return *model_; }
    const model::ModelInfo& info() const { return model_->info(); }
    const tokenizer::Tokenizer& tokenizer() const { return tokenizer_; }
    model::Session& session() { return *session_; }
    // Where the weights went, the context and what it all takes (model/memory_plan.h).
    const model::MemoryPlan& memory_plan() const { return plan_; }

    // The template conversations render through: the file's, the model's, or ChatML when the model
    // has none (chat_template_is_fallback(); llama.cpp falls back the same way).
    const chat::ChatTemplate& chat_template() const { return *chat_template_; }
    bool chat_template_is_fallback() const { return chat_template_fallback_; }
    // Where a reply ends besides the vocabulary's end-of-generation tokens: ChatML's end of turn
    // when the fallback template is in use (a token where the vocabulary has it, else its text).
    const StopSet& template_stops() const { return template_stops_; }

    // The vocabulary as grammars see it, built on first use (a walk over every token) and shared by
    // every sampler with a grammar; safe to call from any thread.
    std::shared_ptr<const sampling::TokenTable> token_table() const;

    // The image encoder of options().mmproj_path; null without one.
    vision::Encoder* encoder() { return encoder_.get(); }

    // Seconds from the constructor's start (before the device and the file are opened) until the
    // weights were on the device and the decode graph baked (its pipelines compiled or read from the
    // pipeline cache).
    double load_seconds() const { return load_seconds_; }

private:
    std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();  // before the file is opened
    EngineOptions options_;
    gpu::Instance instance_;
    gpu::Device device_;
    gguf::File file_;
    tokenizer::Tokenizer tokenizer_;
    model::MemoryPlan plan_;
    std::unique_ptr<model::Model> model_;
    std::unique_ptr<model::Session> session_;
    std::optional<chat::ChatTemplate> chat_template_;
    bool chat_template_fallback_ = false;
    StopSet template_stops_;
    std::optional<gguf::File> mmproj_;
    std::unique_ptr<vision::Encoder> encoder_;
    mutable std::once_flag token_table_once_;
    mutable std::shared_ptr<const sampling::TokenTable> token_table_;
    double load_seconds_ = 0;
};

}  // namespace vkllm::engine
