#pragma once
// OpenAI's API (and llama-server's conventions) as JSON in and out: request bodies checked field by
// field into engine requests, and the response and stream-chunk bodies of chat and text completions.
// A bad request becomes an ApiError: OpenAI's error shape with a status code and the field it names.
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/scheduler.h"
#include "vision/image.h"

namespace vkllm::server {

struct ApiError : std::runtime_error {
    int status;
    std::string message;  // whole: what() would end at an embedded NUL
    std::string type, code, param;
    ApiError(int status, std::string message, std::string type = "invalid_request_error", std::string code = {},
             std::string param = {});
    nlohmann::ordered_json body() const;  // {"error": {"message", "type", "code", "param"}}
};

enum class Endpoint { ChatCompletions, Completions };

// OpenAI's tool_choice: whether the reply may (auto), must not (none) or must (required, or the one
// named) call the tools.
enum class ToolChoice { Auto, None, Required, Named };

// What a completion request asks for, its prompt still to be rendered and tokenized.
struct CompletionRequest {
    Endpoint endpoint = Endpoint::Completions;
    std::string model;                          // as the client named it; empty: not given
    nlohmann::ordered_json messages;            // chat: [{role, content, tool_calls | tool_call_id}], image parts as media markers
    nlohmann::ordered_json tools;               // chat: OpenAI's function tools, checked; null: none
    ToolChoice tool_choice = ToolChoice::Auto;
    std::string tool_name;                      // ToolChoice::Named: the function
    bool parallel_tool_calls = true;
    std::string prompt;                         // completions: the text
    std::vector<int32_t> prompt_tokens;         // completions: token ids given in place of text
    std::vector<vision::Image> images;          // chat: decoded image_url data URIs, in order
    sampling::SamplerParams sampling;
    std::optional<uint32_t> max_tokens;         // none: until the context is full
    std::vector<std::string> stop;
    bool stream = false;
    bool include_usage = false;                 // stream_options.include_usage
    bool echo = false;                          // completions: the prompt's text before the reply's
    // What constrains the reply's text, to be compiled into sampling.grammar: llama-server's `grammar`
    // (GBNF), or a JSON Schema (its `json_schema`, or response_format json_schema / json_object).
    std::string grammar;
    nlohmann::ordered_json json_schema;  // null: none
    bool json_schema_strict = true;
    std::string constraint_field;        // the field that gave it, for errors
    bool ignore_eos = false;                    // llama-server's: end-of-generation tokens are text
};

// What the server can take, checked while parsing so that nothing is built only to be refused.
struct ParseLimits {
    bool images = false;            // an image encoder is loaded: image_url parts are decoded
    size_t max_prompt_bytes = 0;    // longer prompt text cannot fit the context (0: no bound)
    uint32_t n_ctx = UINT32_MAX;    // token-id prompts of this length or more are refused
    uint32_t n_vocab = UINT32_MAX;  // logit_bias on a token id from here on is refused
};

// Throws ApiError (400) naming the field that is missing, of the wrong type or out of range.
CompletionRequest parse_request(Endpoint endpoint, const std::string& body, const ParseLimits& limits = {});

// POST /v1/embeddings: {"input": a string, strings, token ids or lists of them, "encoding_format"}.
struct EmbeddingRequest {
    std::string model;
    std::vector<std::string> texts;                 // either texts
    std::vector<std::vector<int32_t>> token_lists;  // or token-id inputs, in order
    bool base64 = false;                            // encoding_format "base64": little-endian float32
};
constexpr size_t max_embedding_inputs = 2048;
EmbeddingRequest parse_embedding_request(const std::string& body);
// {"object": "list", "data": [{"object": "embedding", "index", "embedding"}], "model", "usage"}.
nlohmann::ordered_json embedding_response(const std::string& model, const std::vector<std::vector<float>>& vectors, bool base64,
                                          size_t prompt_tokens);

// The response objects. `id` is the completion's ("chatcmpl-..." / "cmpl-..."), `created` Unix seconds.
struct ResponseContext {
    Endpoint endpoint;
    std::string id, model;
    int64_t created;
};

// A token and its log-probability, as a response shows it.
struct TokenChoice {
    int32_t id;
    std::string piece;  // the token's bytes (not always whole UTF-8)
    double logprob;
};
// A reply token's log-probabilities (logprobs): the sampled token and the most likely ones.
struct ReplyToken {
    TokenChoice sampled;
    std::vector<TokenChoice> top;
};

// A tool call of a reply, with the id the server gave it.
struct ReplyCall {
    std::string id, name, arguments;  // arguments: a JSON object as text
};

// OpenAI's: "stop", "length", or "tool_calls" for a reply that called tools.
std::string finish_reason(engine::FinishReason reason, bool called = false);
nlohmann::ordered_json usage(const engine::Completion& completion);
// `tokens`: with logprobs asked for, the log-probabilities of the reply's (or this chunk's) tokens;
// `text_offset`: where the first of them starts in the choice's text (completions' text_offset).
struct TokenLogprobs {
    bool asked = false;
    std::span<const ReplyToken> tokens;
    size_t text_offset = 0;
};
nlohmann::ordered_json response_body(const ResponseContext& context, const std::string& text, const std::vector<ReplyCall>& calls,
                                     const engine::Completion& completion, const TokenLogprobs& logprobs = {});
// A stream chunk with new text; with `first` a chat chunk also carries the assistant role.
nlohmann::ordered_json text_chunk(const ResponseContext& context, const std::string& text, bool first,
                                  const TokenLogprobs& logprobs = {});
// A stream chunk with a reply's tool calls, each whole (delta.tool_calls).
nlohmann::ordered_json tool_calls_chunk(const ResponseContext& context, const std::vector<ReplyCall>& calls, bool first);
// The last chunk of a stream, with the finish reason (and no text).
nlohmann::ordered_json final_chunk(const ResponseContext& context, const engine::Completion& completion, bool called = false,
                                   const TokenLogprobs& logprobs = {});
// The chunk stream_options.include_usage asks for after the last: no choices, the usage.
nlohmann::ordered_json usage_chunk(const ResponseContext& context, const engine::Completion& completion);

}  // namespace vkllm::server
