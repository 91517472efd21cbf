#pragma once
// Generating a reply: sampled tokens become text as they come, and a reply ends at an
// end-of-generation token, a stop token or string, its token limit, a full context, or when the
// listener asks. One loop (generate) serves every frontend that runs one sequence; the server's
// scheduler drives the same TextStream per sequence between batched steps.
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/session.h"
#include "sampling/sampler.h"
#include "tokenizer/tokenizer.h"

namespace vkllm::engine {

enum class FinishReason {
    Stop,       // an end-of-generation token, a stop token or a stop string
    Length,     // the token limit
    Context,    // the context is full
    Cancelled,    // the listener stopped it, or it never started
    Interrupted,  // its runner stopped before the reply ended (a server shutting down)
};
// "stop", "length", "context", "cancelled", "interrupted" (OpenAI's finish_reason for the first two).
std::string_view finish_reason_name(FinishReason reason);

// Where replies end besides the vocabulary's end-of-generation tokens.
struct StopSet {
    std::vector<tokenizer::TokenId> tokens;
    std::vector<std::string> strings;  // the text before the first one is kept, the rest dropped
};

struct GenerationLimits {
    uint32_t max_tokens = UINT32_MAX;
    StopSet stops;
    bool ignore_eos = false;  // end-of-generation tokens are text like any other
    bool control_text = false;  // control tokens show as their text (Mistral's [TOOL_CALLS], for a parser)
};

class TextStream {
public:
    // strip_leading_space: drop the space an SPM vocabulary puts before the first piece (a reply
    // that starts a text, as llama.cpp's detokenizer does).
    TextStream(const tokenizer::Tokenizer& tokenizer, GenerationLimits limits, bool strip_leading_space = false);

    // Takes the next sampled token and returns the text that can be shown now. Text that may be the
    // start of a stop string is held back until it cannot, and so are the first bytes of a character
    // split across tokens; an ending token shows nothing. Everything a stream returns is well-formed
    // UTF-8: bytes that make no character, and one left incomplete at the end, become U+FFFD.
    std::string push(tokenizer::TokenId id);
    // Ends the reply for a reason outside the stream (full context, cancelled): the held-back text.
    std::string finish(FinishReason reason);

    std::optional<FinishReason> finish_reason() const { return finish_; }
    uint32_t n_tokens() const { return n_tokens_; }  // tokens of the reply, the ending one not counted
    uint32_t tokens_left() const { return limits_.max_tokens - n_tokens_; }  // before max_tokens ends it

private:
    std::string flush();

    const tokenizer::Tokenizer& tokenizer_;
    GenerationLimits limits_;
    tokenizer::StreamDecoder decoder_;
    bool strip_leading_space_;
    std::string held_;
    uint32_t n_tokens_ = 0;
    std::optional<FinishReason> finish_;
};

struct Generated {
    std::vector<tokenizer::TokenId> tokens;  // the reply's tokens (not the ending one)
    std::vector<sampling::TokenLogprobs> logprobs;  // one per token, when the sampler records them
    FinishReason finish = FinishReason::Stop;
    uint32_t context_shifts = 0;
};

// What generate does when the context fills: stop (FinishReason::Context), or shift it as llama.cpp's
// --context-shift does, keeping the first n_keep tokens and dropping the oldest half of the rest.
struct ContextShift {
    bool enabled = false;
    uint32_t n_keep = 0;
};

// The shift itself on sequence `seq`: keeps its first n_keep positions, drops half of those after them
// (the oldest) and runs the other half again right after the kept ones. llama.cpp moves the cached keys
// and re-rotates them instead; running them again costs a prefill of half the context and gives the
// exact keys of the new positions. Throws when nothing could be dropped or an image sits in the tail.
void shift_context(model::Session& session, uint32_t seq, uint32_t n_keep);

// Called with each piece of text as it can be shown; returning false cancels the generation.
using TextCallback = std::function<bool(std::string_view text)>;

// Runs a prompt on sequence `seq` as Session::eval does, in slices of its micro-batch (the chunks eval
// makes), calling `progress` with the tokens done after each: a long prompt can report as it goes.
using PrefillProgress = std::function<void(uint64_t done, uint64_t total)>;
std::span<const float> prefill(model::Session& session, uint32_t seq, std::span<const int32_t> tokens,
                               const PrefillProgress& progress);

// Samples from `logits` (those after the prompt), streams the text, runs each token on the
// session and samples again, until the stream ends or the session's context is full (or, with
// `shift`, shifts it and goes on).
Generated generate(model::Session& session, sampling::Sampler& sampler, TextStream& stream,
                   std::span<const float> logits, const TextCallback& on_text, const ContextShift& shift = {});

}  // namespace vkllm::engine
