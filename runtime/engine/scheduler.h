#pragma once
// Continuous batching: many requests share the session's sequences, as llama-server's slots and
// vLLM's scheduler do. One thread owns the session and loops:
//   1. admit queued requests into free sequences, each into the one whose cached tokens share the
//      longest prefix with its prompt (a chat that re-sends its history runs only the new turn);
//   2. run one prefill chunk (at most prefill_chunk tokens) of one sequence still reading its
//      prompt, oldest first, so a long prompt delays the others' next token by one chunk at most;
//   3. run one decode step for every sequence that is generating: one replayed graph for all of
//      them (the weights are read once per step), then sample each sequence's next token.
// A request whose listener returns false (a client gone) is dropped before the next step and its
// sequence freed, or taken out of the queue; its cells stay for a later prompt that shares them.
// Whatever one request's admission, sampling or listener throws ends that request alone, with
// Completion::error; the others' steps go on. A reply ends at the latest when
// prompt and reply together fill the sequence's context (FinishReason::Context).
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/engine.h"
#include "engine/generation.h"
#include "sampling/sampler.h"
#include "vision/prompt.h"

namespace vkllm::engine {

struct Request {
    std::vector<tokenizer::TokenId> prompt;  // with images: the text tokens alone (the sampler's history)
    sampling::SamplerParams sampling;        // with a grammar, it constrains the reply (not the prompt)
    GenerationLimits limits;
    // A prompt with images (vision/prompt.h): its text and image chunks and the images they name. It
    // runs whole in one step, its images encoded then, and reuses no cached prefix.
    std::vector<vision::PromptChunk> chunks;
    std::vector<vision::Image> images;
};

struct Completion {
    uint32_t prompt_tokens = 0;  // positions: an image's count as many as its embeddings
    uint32_t cached_tokens = 0;  // prompt tokens whose cells were reused rather than computed
    uint32_t completion_tokens = 0;
    FinishReason finish = FinishReason::Stop;
    std::string error;  // set when the request failed (its text so far was sent)
    // The error is the request's own mistake, not the server's: its grammar too ambiguous to follow,
    // or one that no token can continue (logit_bias banning what could). A client's 4xx, not a 500.
    bool invalid_request = false;
};

// Called on the scheduler's thread, so they must be quick: hand the text to another thread.
struct RequestListener {
    TextCallback on_text;                            // false: stop this request (the client is gone)
    // With sampling.top_logprobs >= 0: each reply token's log-probabilities, before its text.
    std::function<void(const sampling::TokenLogprobs&)> on_logprobs;
    std::function<void(const Completion&)> on_done;  // always called once, last
    std::function<bool()> cancelled;                 // optional: asked before every step
};

struct SchedulerOptions {
    uint32_t prefill_chunk = 256;  // prompt tokens one step runs for one sequence
    uint32_t max_queue = 256;      // requests waiting for a sequence beyond which submit refuses
};

// Counters since the start, for /metrics.
struct SchedulerMetrics {
    uint64_t requests_finished = 0, prompt_tokens = 0, cached_prompt_tokens = 0, generated_tokens = 0;
    double prompt_seconds = 0, decode_seconds = 0;  // time in prefill chunks and in decode steps
    uint64_t decode_steps = 0;
    uint32_t queued = 0, active = 0;
    uint64_t cells_in_use = 0, cells_total = 0;
};

class Scheduler {
public:
    Scheduler(Engine& engine, SchedulerOptions options = {});
    ~Scheduler();  // stops: running requests end as interrupted, queued ones as cancelled
    Scheduler(const Scheduler&) = delete;
    Scheduler& operator=(const Scheduler&) = delete;

    // Queues a request; false when the queue is full. Throws vkllm::Error, before queuing, when the
    // prompt is empty, holds a token outside the vocabulary, leaves no room in a sequence's context
    // for a generated token, has images and the engine no encoder, or sampling parameters out of
    // range (sampling::validate), and once the scheduler stops. A request whose grammar is too
    // ambiguous or no token can continue ends with Completion::error saying so (invalid_request).
    bool submit(Request request, RequestListener listener);
    // Ends every request and the thread: running ones as interrupted (their text so far sent), queued
    // ones as cancelled. submit refuses from then on.
    void stop();

    SchedulerMetrics metrics() const;

private:
    struct Active;

    void loop();
    uint32_t n_active() const;  // sequences holding a request
    // Places a request in the free sequence that best serves it (scheduler thread, like the rest).
    void admit(Request request, RequestListener listener, uint64_t order);
    // Ends a request that holds no sequence: cancelled in the queue, or refused at admission.
    void end_waiting(const Request& request, const RequestListener& listener, Completion completion);
    void drop_cancelled();
    void prefill_step();
    void decode_step();
    // Samples the next token from logits and streams it, or ends the request.
    void take_token(Active& active, std::span<const float> logits);
    // Ends a sequence's request and frees the sequence; throws nothing.
    void finish(Active& active, FinishReason reason, std::string error = {}, bool invalid_request = false);

    Engine& engine_;
    SchedulerOptions options_;
    mutable std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<std::pair<Request, RequestListener>> queue_;  // guarded by mutex_
    bool stopping_ = false;                                  // guarded by mutex_
    SchedulerMetrics metrics_;                               // guarded by mutex_
    std::vector<std::unique_ptr<Active>> sequences_;         // by sequence; null: free (scheduler thread)
    std::thread thread_;
};

}  // namespace vkllm::engine
