#include "engine/scheduler.h"

#include <algorithm>
#include <chrono>

#include "core/error.h"
#include "engine/media.h"

namespace vkllm::engine {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

size_t common_prefix(std::span<const int32_t> a, std::span<const int32_t> b) {
    return size_t(std::ranges::mismatch(a, b).in1 - a.begin());
}

// A listener's call. What it throws is dropped: the request ends anyway, and the thread serves the others.
template <class Call>
void notify(Call&& call) noexcept {
    try {
        call();
    } catch (...) {
    }
}

// A listener that cannot tell is taken for one whose client is gone.
bool is_cancelled(const RequestListener& listener) noexcept {
    try {
        return listener.cancelled && listener.cancelled();
    } catch (...) {
        return true;
    }
}

}  // namespace

struct Scheduler::Active {
    // The sampler (its grammar's matcher) is built first, from `r` before it is moved: when it throws
    // (a grammar too ambiguous to start), the request and its listener are still the caller's to answer.
    sampling::Sampler sampler;
    TextStream stream;
    Request request;
    RequestListener listener;
    uint32_t seq = 0;
    uint64_t order = 0;        // admission order: prefill goes oldest first
    uint32_t prompt_done = 0;  // prompt tokens in the cache
    uint32_t cached = 0;       // of those, reused from an earlier request
    uint32_t positions = 0;    // of the whole prompt once it ran (images count their embeddings)
    tokenizer::TokenId next = tokenizer::no_token;  // sampled, runs in the next decode step

    Active(Request&& r, RequestListener&& l, const Engine& engine)
        : sampler(r.sampling, r.sampling.grammar ? engine.token_table() : nullptr), stream(engine.tokenizer(), r.limits),
          request(std::move(r)), listener(std::move(l)) {}
};

Scheduler::Scheduler(Engine& engine, SchedulerOptions options)
    : engine_(engine), options_(options) {
    if (options_.prefill_chunk == 0) fail("the prefill chunk must hold at least one token");
    const uint32_t n_seq = engine.session().n_seq();
    sequences_.resize(n_seq);
    metrics_.cells_total = uint64_t(n_seq) * engine.session().n_ctx();
    thread_ = std::thread([this] { loop(); });
}

Scheduler::~Scheduler() { stop(); }

void Scheduler::stop() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
}

SchedulerMetrics Scheduler::metrics() const {
    std::lock_guard lock(mutex_);
    return metrics_;
}

bool Scheduler::submit(Request request, RequestListener listener) {
    const uint32_t n_ctx = engine_.session().n_ctx();
    if (request.prompt.empty()) fail("the prompt is empty");
    if (!request.images.empty() && !engine_.encoder())
        fail("the prompt has images but the model has no image encoder (an mmproj)");
    if (request.prompt.size() >= n_ctx)
        fail("the prompt's {} tokens leave no room to generate in a context of {} tokens", request.prompt.size(), n_ctx);
    for (tokenizer::TokenId id : request.prompt)
        if (id < 0 || uint32_t(id) >= engine_.info().n_vocab)
            fail("token id {} is outside the vocabulary of {}", id, engine_.info().n_vocab);
    sampling::validate(request.sampling, {}, engine_.info().n_vocab);
    {
        std::lock_guard lock(mutex_);
        if (stopping_) fail("the server is shutting down");
        if (queue_.size() >= options_.max_queue) return false;
        queue_.emplace_back(std::move(request), std::move(listener));
        metrics_.queued = uint32_t(queue_.size());
    }
    wake_.notify_all();
    return true;
}

void Scheduler::loop() {
    uint64_t admitted = 0;
    for (;;) {
        std::vector<std::pair<Request, RequestListener>> arrivals, abandoned;
        {
            std::unique_lock lock(mutex_);
            wake_.wait(lock, [&] { return stopping_ || !queue_.empty() || n_active() > 0; });
            if (stopping_) break;
            // A queued request whose client left never takes a sequence (nor builds its grammar).
            for (auto it = queue_.begin(); it != queue_.end();) {
                if (!is_cancelled(it->second)) {
                    ++it;
                    continue;
                }
                abandoned.push_back(std::move(*it));
                it = queue_.erase(it);
            }
            const size_t free = sequences_.size() - n_active();
            while (arrivals.size() < free && !queue_.empty()) {
                arrivals.push_back(std::move(queue_.front()));
                queue_.pop_front();
            }
            metrics_.queued = uint32_t(queue_.size());
        }
        for (auto& [request, listener] : abandoned) end_waiting(request, listener, {.finish = FinishReason::Cancelled});
        for (auto& [request, listener] : arrivals) admit(std::move(request), std::move(listener), admitted++);
        try {
            drop_cancelled();
            prefill_step();
            decode_step();
        } catch (const std::exception& error) {
            // Each request's own work is guarded where it runs; what gets here is a step's bookkeeping
            // (memory), which no request owns: the running ones end with it, the thread goes on.
            for (auto& active : sequences_)
                if (active) finish(*active, FinishReason::Stop, error.what());
        }
        std::lock_guard lock(mutex_);
        metrics_.active = n_active();
        metrics_.cells_in_use = engine_.session().cells_in_use();
    }
    for (auto& active : sequences_)
        if (active) finish(*active, FinishReason::Interrupted);
    std::deque<std::pair<Request, RequestListener>> queued;
    {
        std::lock_guard lock(mutex_);
        queued.swap(queue_);
        metrics_.queued = metrics_.active = 0;
    }
    for (auto& [request, listener] : queued) end_waiting(request, listener, {.finish = FinishReason::Cancelled});
}

uint32_t Scheduler::n_active() const {
    return uint32_t(std::ranges::count_if(sequences_, [](const auto& active) { return active != nullptr; }));
}

void Scheduler::admit(Request request, RequestListener listener, uint64_t order) {
    model::Session& session = engine_.session();
    // The free sequence whose cache shares the longest prefix with the prompt, else the lowest: a
    // decode step covers rows 0 up to its highest sequence, so low sequences keep steps small.
    uint32_t best = 0;
    size_t best_shared = 0;
    bool found = false;
    for (uint32_t seq = 0; seq < sequences_.size(); ++seq) {
        if (sequences_[seq]) continue;
        const size_t shared = common_prefix(session.history(seq), request.prompt);
        if (!found || shared > best_shared) {
            best = seq;
            best_shared = shared;
            found = true;
        }
    }
    // The last prompt token always runs: its logits give the first generated token.
    const uint32_t keep = request.images.empty() ? uint32_t(std::min(best_shared, request.prompt.size() - 1)) : 0;
    std::unique_ptr<Active> admitted;
    try {
        admitted = std::make_unique<Active>(std::move(request), std::move(listener), engine_);
    } catch (const Error& error) {  // its grammar, too ambiguous to start (Active moved nothing out yet)
        return end_waiting(request, listener, {.error = error.what(), .invalid_request = true});
    } catch (const std::exception& error) {
        return end_waiting(request, listener, {.error = error.what()});
    }
    Active& active = *(sequences_[best] = std::move(admitted));
    active.seq = best;
    active.order = order;
    try {
        session.truncate(best, keep);
        active.prompt_done = active.cached = session.n_past(best);
        for (tokenizer::TokenId id : active.request.prompt) active.sampler.accept(id);
    } catch (const std::exception& error) {
        finish(active, FinishReason::Stop, error.what());
    }
}

void Scheduler::end_waiting(const Request& request, const RequestListener& listener, Completion completion) {
    completion.prompt_tokens = uint32_t(request.prompt.size());
    {
        std::lock_guard lock(mutex_);
        metrics_.requests_finished += 1;
    }
    notify([&] { listener.on_done(completion); });
}

void Scheduler::drop_cancelled() {
    for (auto& active : sequences_)
        if (active && is_cancelled(active->listener)) finish(*active, FinishReason::Cancelled);
}

void Scheduler::prefill_step() {
    Active* oldest = nullptr;
    for (auto& active : sequences_)
        if (active && active->prompt_done < active->request.prompt.size() && (!oldest || active->order < oldest->order))
            oldest = active.get();
    if (!oldest) return;
    Active& active = *oldest;
    const std::span<const tokenizer::TokenId> prompt(active.request.prompt);
    const bool media = !active.request.images.empty();
    const uint32_t n = media ? uint32_t(prompt.size()) : std::min<uint32_t>(options_.prefill_chunk, uint32_t(prompt.size()) - active.prompt_done);
    const auto started = Clock::now();
    model::Session& session = engine_.session();
    const uint32_t positions_before = session.n_past(active.seq);
    std::span<const float> logits;
    std::vector<float> media_logits;
    try {
        if (media) {
            const vision::PromptRun run = vision::run_prompt(session, *engine_.encoder(), active.request.chunks,
                                                             active.request.images, active.seq);
            media_logits = logits_to_continue(run, engine_.info().n_vocab);
            logits = media_logits;
        } else {
            logits = session.eval(active.seq, prompt.subspan(active.prompt_done, n));
        }
    } catch (const std::exception& error) {
        return finish(active, FinishReason::Stop, error.what());
    }
    active.prompt_done += n;
    active.positions = session.n_past(active.seq);
    {
        std::lock_guard lock(mutex_);
        metrics_.prompt_tokens += active.positions - positions_before;
        metrics_.prompt_seconds += seconds_since(started);
    }
    if (active.prompt_done == prompt.size()) take_token(active, logits);
}

void Scheduler::decode_step() {
    model::Session& session = engine_.session();
    std::vector<Active*> batch;
    std::vector<uint32_t> seqs;
    std::vector<tokenizer::TokenId> tokens;
    for (auto& active : sequences_) {
        if (!active || active->next == tokenizer::no_token) continue;
        batch.push_back(active.get());
        seqs.push_back(active->seq);
        tokens.push_back(active->next);
    }
    if (batch.empty()) return;
    const auto started = Clock::now();
    std::span<const float> logits;
    try {
        logits = session.decode(seqs, tokens);
    } catch (const std::exception& error) {
        for (Active* active : batch) finish(*active, FinishReason::Stop, error.what());
        return;
    }
    {
        std::lock_guard lock(mutex_);
        metrics_.decode_seconds += seconds_since(started);
        metrics_.decode_steps += 1;
    }
    const size_t n_vocab = engine_.info().n_vocab;
    for (size_t i = 0; i < batch.size(); ++i) take_token(*batch[i], logits.subspan(i * n_vocab, n_vocab));
}

void Scheduler::take_token(Active& active, std::span<const float> logits) {
    tokenizer::TokenId id;
    try {
        // The tokens the reply may still take: max_tokens, and the context's room (this one included).
        const model::Session& session = engine_.session();
        const uint32_t budget = std::min(active.stream.tokens_left(), session.n_ctx() - session.n_past(active.seq));
        // Throws for a grammar that no token can continue, or too ambiguous to follow this far.
        id = active.sampler.sample(logits, budget);
    } catch (const Error& error) {
        return finish(active, FinishReason::Stop, error.what(), /*invalid_request=*/true);
    } catch (const std::exception& error) {
        return finish(active, FinishReason::Stop, error.what());
    }
    try {
        const uint32_t before = active.stream.n_tokens();
        const std::string text = active.stream.push(id);
        if (active.stream.n_tokens() > before && active.request.sampling.top_logprobs >= 0 && active.listener.on_logprobs)
            active.listener.on_logprobs(active.sampler.logprobs());
        const bool listening = text.empty() || active.listener.on_text(text);
        if (active.stream.finish_reason()) return finish(active, *active.stream.finish_reason());
        if (!listening) return finish(active, FinishReason::Cancelled);
        // The token needs a cell to run: with the context full, the prompt and reply fill it exactly.
        if (engine_.session().n_past(active.seq) + 1 >= engine_.session().n_ctx()) return finish(active, FinishReason::Context);
        active.next = id;
    } catch (const std::exception& error) {
        finish(active, FinishReason::Stop, error.what());
    }
}

void Scheduler::finish(Active& active, FinishReason reason, std::string error, bool invalid_request) {
    std::string rest;
    notify([&] { rest = active.stream.finish(reason); });
    if (!rest.empty() && reason != FinishReason::Cancelled) notify([&] { active.listener.on_text(rest); });
    const Completion completion{.prompt_tokens = std::max(active.positions, uint32_t(active.request.prompt.size())),
                                .cached_tokens = active.cached,
                                .completion_tokens = active.stream.n_tokens(),
                                .finish = active.stream.finish_reason().value_or(reason),
                                .error = std::move(error),
                                .invalid_request = invalid_request};
    {
        std::lock_guard lock(mutex_);
        metrics_.requests_finished += 1;
        metrics_.cached_prompt_tokens += active.cached;
        metrics_.generated_tokens += completion.completion_tokens;
    }
    notify([&] { active.listener.on_done(completion); });
    sequences_[active.seq].reset();
}

}  // namespace vkllm::engine
