#include "engine/generation.h"

#include <algorithm>

#include "core/error.h"
#include "core/text.h"
#include "tokenizer/unicode.h"

namespace vkllm::engine {

std::string_view finish_reason_name(FinishReason reason) {
    switch (reason) {
        case FinishReason::Stop: return "stop";
        case FinishReason::Length: return "length";
        case FinishReason::Context: return "context";
        case FinishReason::Cancelled: return "cancelled";
        case FinishReason::Interrupted: return "interrupted";
    }
    return "stop";
}

TextStream::TextStream(const tokenizer::Tokenizer& tokenizer, GenerationLimits limits, bool strip_leading_space)
    : tokenizer_(tokenizer), limits_(std::move(limits)), decoder_(tokenizer, limits_.control_text), strip_leading_space_(strip_leading_space) {
    std::erase(limits_.stops.strings, std::string());
    // The text is well-formed UTF-8 (StreamDecoder), so stop strings are looked for in that form: one
    // with stray bytes could otherwise match inside a character and cut it.
    for (std::string& stop : limits_.stops.strings) stop = tokenizer::valid_utf8(stop);
}

std::string TextStream::flush() {
    std::string text = std::move(held_) + decoder_.finish();
    held_.clear();
    return text;
}

std::string TextStream::finish(FinishReason reason) {
    if (finish_) return {};
    finish_ = reason;
    return flush();
}

std::string TextStream::push(tokenizer::TokenId id) {
    if (finish_) return {};
    if ((!limits_.ignore_eos && tokenizer_.is_eog(id)) || std::ranges::find(limits_.stops.tokens, id) != limits_.stops.tokens.end()) {
        finish_ = FinishReason::Stop;
        return flush();
    }
    ++n_tokens_;
    std::string piece = decoder_.push(id);
    if (strip_leading_space_ && !piece.empty()) {
        if (piece.front() == ' ') piece.erase(0, 1);
        strip_leading_space_ = false;
    }
    held_ += piece;
    // The earliest stop string ends the reply before it.
    size_t stop_at = std::string::npos;
    for (const std::string& stop : limits_.stops.strings) stop_at = std::min(stop_at, held_.find(stop));
    if (stop_at != std::string::npos) {
        finish_ = FinishReason::Stop;
        std::string text = held_.substr(0, stop_at);
        held_.clear();
        return text;
    }
    if (n_tokens_ >= limits_.max_tokens) {
        finish_ = FinishReason::Length;
        return flush();
    }
    // Hold back the longest tail that begins some stop string.
    size_t hold = 0;
    for (const std::string& stop : limits_.stops.strings) hold = std::max(hold, marker_start_at_end(held_, stop));
    std::string text = held_.substr(0, held_.size() - hold);
    held_.erase(0, held_.size() - hold);
    return text;
}

std::span<const float> prefill(model::Session& session, uint32_t seq, std::span<const int32_t> tokens,
                               const PrefillProgress& progress) {
    if (tokens.empty() || session.n_past(seq) + tokens.size() > session.n_ctx())
        return session.eval(seq, tokens);  // eval names the overrun before running anything
    std::span<const float> logits;
    for (size_t done = 0; done < tokens.size();) {
        const size_t count = std::min<size_t>(session.n_ubatch(), tokens.size() - done);
        logits = session.eval(seq, tokens.subspan(done, count));
        done += count;
        if (progress) progress(done, tokens.size());
    }
    return logits;
}

void shift_context(model::Session& session, uint32_t seq, uint32_t n_keep) {
    const uint32_t n_past = session.n_past(seq);
    if (n_keep + 2 > n_past)
        fail("cannot shift the context: keeping {} of its {} tokens leaves none to drop", n_keep, n_past);
    const uint32_t n_discard = (n_past - n_keep) / 2;
    const std::span<const int32_t> history = session.history(seq);
    const std::vector<int32_t> tail(history.begin() + n_keep + n_discard, history.begin() + n_past);
    if (std::ranges::find(tail, -1) != tail.end())
        fail("cannot shift the context over an image: its embeddings are not kept to run again");
    session.truncate(seq, n_keep);
    session.eval(seq, tail);
}

Generated generate(model::Session& session, sampling::Sampler& sampler, TextStream& stream,
                   std::span<const float> logits, const TextCallback& on_text, const ContextShift& shift) {
    Generated generated;
    auto emit = [&](const std::string& text) { return text.empty() || on_text(text); };
    for (;;) {
        // The tokens left: max_tokens, and without a shift the context (the last one sampled runs no more).
        const uint32_t room = shift.enabled ? UINT32_MAX : session.n_ctx() - session.n_past() + 1;
        const tokenizer::TokenId next = sampler.sample(logits, std::min(stream.tokens_left(), room));
        const uint32_t before = stream.n_tokens();
        const bool shown = emit(stream.push(next));
        if (stream.n_tokens() > before) {
            generated.tokens.push_back(next);
            if (sampler.params().top_logprobs >= 0) generated.logprobs.push_back(sampler.logprobs());
        }
        if (stream.finish_reason()) break;
        if (!shown) {
            stream.finish(FinishReason::Cancelled);
            break;
        }
        if (session.n_past() >= session.n_ctx()) {
            if (!shift.enabled) {
                emit(stream.finish(FinishReason::Context));
                break;
            }
            shift_context(session, 0, shift.n_keep);
            ++generated.context_shifts;
        }
        logits = session.eval(std::span(&next, 1));
    }
    generated.finish = *stream.finish_reason();
    return generated;
}

}  // namespace vkllm::engine
