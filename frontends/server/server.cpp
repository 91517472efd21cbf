#include "server.h"

#include <cstdio>
#include <ctime>
#include <mutex>
#include <random>

#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <fmt/format.h>

#include "chat/prompt.h"
#include "chat/tool_calls.h"
#include "engine/embeddings.h"
#include "sampling/json_schema.h"
#include "core/error.h"
#include "openai.h"
#include "vision/prompt.h"

namespace vkllm::server {
namespace {

using json = nlohmann::ordered_json;

// Bytes that can never be valid UTF-8 in a message (a request's own text quoted back) become U+FFFD.
std::string to_text(const json& body) { return body.dump(-1, ' ', false, json::error_handler_t::replace); }

void send_json(http::Reply& reply, int status, const json& body) { reply.send(status, "application/json", to_text(body)); }

std::string sse_event(const json& body) { return "data: " + to_text(body) + "\n\n"; }

// Compares without leaking, through its timing, how much of a guess was right.
bool same_secret(std::string_view given, std::string_view secret) {
    uint8_t difference = given.size() == secret.size() ? 0 : 1;
    for (size_t i = 0; i < given.size(); ++i) difference |= uint8_t(given[i] ^ secret[i % std::max<size_t>(secret.size(), 1)]);
    return difference == 0;
}

// %XX escapes of a path segment (a model id may hold any character).
std::string percent_decoded(std::string_view text) {
    std::string decoded;
    for (size_t i = 0; i < text.size(); ++i) {
        auto hex = [](char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1; };
        if (text[i] == '%' && i + 2 < text.size() && hex(text[i + 1]) >= 0 && hex(text[i + 2]) >= 0) {
            decoded += char(hex(text[i + 1]) * 16 + hex(text[i + 2]));
            i += 2;
        } else {
            decoded += text[i];
        }
    }
    return decoded;
}

// The longest text one token stands for: a prompt longer than (n_ctx + 1) such pieces cannot fit in
// the context, whatever it says, so it is refused before it is tokenized. Zero (no bound) for
// WordPiece, whose unknown-word token stands for a whole word of any length.
size_t longest_piece(const tokenizer::Tokenizer& tokenizer) {
    const tokenizer::Vocab& vocab = tokenizer.vocab();
    if (vocab.model == tokenizer::Model::Wpm) return 0;
    size_t longest = 1;
    for (size_t id = 0; id < vocab.size(); ++id)
        longest = std::max(longest, tokenizer.token_to_piece(tokenizer::TokenId(id), true).size());
    return longest + 1;  // SPM's space prefix stands for no byte of the text
}

// "call_" and 24 letters and digits: unique enough, and alphanumeric at the end as Mistral's template asks.
std::string new_call_id() {
    static constexpr std::string_view alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    thread_local std::mt19937_64 random{std::random_device{}()};
    std::string id = "call_";
    for (int i = 0; i < 24; ++i) id += alphabet[random() % alphabet.size()];
    return id;
}

}  // namespace

// One request between the scheduler's thread, which produces its text, and the client's connection.
// Everything here runs on the scheduler's thread, after the request thread submitted it.
struct Exchange {
    std::shared_ptr<http::Reply> reply;
    std::atomic<uint64_t>& failed;    // the server's count of requests answered with a 5xx (or an error event)
    std::atomic<uint64_t>& rejected;  // and with a 4xx
    ResponseContext context;
    std::string constraint_field;  // the field whose grammar the reply follows, for its errors
    bool stream = false, include_usage = false;
    std::string echo;  // completions with echo: the prompt's text, before the reply's
    std::string text;  // not streaming: the whole reply
    bool first = true;  // no chunk sent yet: the stream has not begun
    // A chat with tools: the reply's calls are held back from its text and parsed at its end.
    std::optional<chat::ReplySplitter> splitter;
    // With logprobs asked for: every reply token's, and how many a stream has sent.
    const tokenizer::Tokenizer* tokenizer = nullptr;
    bool logprobs_asked = false;
    std::vector<ReplyToken> tokens;
    size_t tokens_sent = 0, bytes_sent = 0;

    void on_logprobs(const sampling::TokenLogprobs& logprobs) {
        auto choice = [&](const sampling::TokenLogprob& token) {
            return TokenChoice{token.id, tokenizer->token_to_piece(token.id, true), token.logprob};
        };
        ReplyToken& token = tokens.emplace_back(ReplyToken{choice(logprobs.sampled), {}});
        for (const sampling::TokenLogprob& alternative : logprobs.top) token.top.push_back(choice(alternative));
    }

    // The tokens not sent yet, for the chunk about to go out.
    TokenLogprobs unsent_logprobs() {
        TokenLogprobs unsent{logprobs_asked, std::span(tokens).subspan(tokens_sent), bytes_sent};
        for (; tokens_sent < tokens.size(); ++tokens_sent) bytes_sent += tokens[tokens_sent].sampled.piece.size();
        return unsent;
    }

    void begin_stream() { reply->begin_stream(200, "text/event-stream", {{"Cache-Control", "no-cache"}}); }

    bool on_text(std::string_view piece) {
        const std::string shown = splitter ? splitter->push(piece) : std::string(piece);
        if (!stream) {
            text += shown;
            return !reply->gone();
        }
        if (!shown.empty() || !echo.empty()) {
            begin_stream();
            reply->write(sse_event(text_chunk(context, std::exchange(echo, {}) + shown, std::exchange(first, false), unsent_logprobs())));
        }
        return !reply->gone();
    }

    // The calls the reply made, with ids; the text that was held back with them goes to `rest`.
    std::vector<ReplyCall> calls(std::string& rest) {
        if (!splitter) return {};
        chat::ParsedReply parsed = splitter->finish();
        rest = std::move(parsed.content);
        std::vector<ReplyCall> calls;
        for (chat::ToolCall& call : parsed.calls) calls.push_back({new_call_id(), std::move(call.name), std::move(call.arguments)});
        return calls;
    }

    // What a request that ended without its reply is answered: a 400 when its grammar was the
    // trouble (too ambiguous, or no token could continue it), a 500 for a fault of the server's, a
    // 503 when the server stopped first. Counted in /metrics as rejected or failed.
    std::optional<ApiError> failure(const engine::Completion& done) {
        std::optional<ApiError> error;
        if (!done.error.empty() && done.invalid_request)
            error.emplace(400, fmt::format("'{}': {}", constraint_field, done.error), "invalid_request_error", "invalid_value",
                          constraint_field);
        else if (!done.error.empty())
            error.emplace(500, done.error, "server_error");
        else if (done.finish == engine::FinishReason::Cancelled)
            error.emplace(503, "the server stopped before the request started", "server_error");
        if (error) (error->status >= 500 ? failed : rejected) += 1;
        return error;
    }

    void on_done(const engine::Completion& done) {
        const std::optional<ApiError> error = failure(done);
        // A stream that sent nothing yet is answered as a whole reply would be: its error's status.
        if (!stream || (error && first)) return send_whole(done, error);
        begin_stream();
        if (error) {
            reply->write(sse_event(error->body()));
        } else {
            std::string rest;
            const std::vector<ReplyCall> made = calls(rest);
            rest = std::exchange(echo, {}) + rest;
            if (!rest.empty()) reply->write(sse_event(text_chunk(context, rest, std::exchange(first, false), unsent_logprobs())));
            if (!made.empty()) reply->write(sse_event(tool_calls_chunk(context, made, std::exchange(first, false))));
            reply->write(sse_event(final_chunk(context, done, !made.empty(), unsent_logprobs())));
            if (include_usage) reply->write(sse_event(usage_chunk(context, done)));
        }
        reply->write("data: [DONE]\n\n");
        reply->end();
    }

    void send_whole(const engine::Completion& done, const std::optional<ApiError>& error) {
        if (error) return send_json(*reply, error->status, error->body());
        std::string rest;
        const std::vector<ReplyCall> made = calls(rest);
        send_json(*reply, 200, response_body(context, echo + text + rest, made, done, {logprobs_asked, tokens, 0}));
    }

    // An exception here (memory, a bug) must not reach the scheduler's thread, which serves every
    // request: it ends this request alone, with a 500 or an error event, counted as failed.
    static engine::RequestListener listener(const std::shared_ptr<Exchange>& exchange) {
        return {.on_text = [exchange](std::string_view piece) {
                    try {
                        return exchange->on_text(piece);
                    } catch (const std::exception& error) {
                        exchange->fail(error);
                        return false;
                    }
                },
                .on_logprobs = [exchange](const sampling::TokenLogprobs& logprobs) {
                    try {
                        exchange->on_logprobs(logprobs);
                    } catch (const std::exception& error) {
                        exchange->fail(error);
                    }
                },
                .on_done = [exchange](const engine::Completion& done) {
                    try {
                        exchange->on_done(done);
                    } catch (const std::exception& error) {
                        exchange->fail(error);
                    }
                },
                .cancelled = [exchange] { return exchange->reply->gone(); }};
    }

    void fail(const std::exception& error) noexcept {
        failed += 1;
        std::fprintf(stderr, "vkllm serve: %s failed: %s\n", context.id.c_str(), error.what());
        try {
            const std::string body = to_text(ApiError(500, fmt::format("the request failed: {}", error.what()), "server_error").body());
            reply->send(500, "application/json", body);  // nothing sent yet
            reply->write("data: " + body + "\n\ndata: [DONE]\n\n");  // a stream
            reply->end();
        } catch (...) {
        }
    }
};

struct Server::Impl {
    engine::Engine& engine;
    engine::Scheduler* scheduler;               // null: an embeddings server
    std::optional<engine::Embedder> embedder;   // an embeddings server's
    std::mutex embedding;                       // the embedder's session: one request at a time
    ServerOptions options;
    http::Server http;
    boost::asio::thread_pool request_threads;
    const size_t longest_piece;
    const chat::ToolFormat tool_format;
    std::atomic<uint64_t> next_id{1}, rejected{0}, failed{0}, embedded{0};
    std::atomic<bool> shutting_down{false};

    Impl(engine::Engine& engine, engine::Scheduler* scheduler, ServerOptions server_options)
        : engine(engine), scheduler(scheduler), options(std::move(server_options)),
          http(http_options(options), [this](http::Request&& request, std::shared_ptr<http::Reply> reply) {
              route(std::move(request), std::move(reply));
          }),
          request_threads(std::max(1u, options.request_threads)), longest_piece(server::longest_piece(engine.tokenizer())),
          tool_format(chat::tool_format(engine.chat_template())) {
        if (!scheduler) embedder.emplace(engine);
    }

    static http::ServerOptions http_options(const ServerOptions& options) {
        return {.limits = options.limits,
                .response_headers = {{"Access-Control-Allow-Origin", "*"}},
                .error_body = [](int status, std::string_view message) {
                    return to_text(ApiError(status, std::string(message), status >= 500 ? "server_error" : "invalid_request_error").body());
                }};
    }

    void refuse(http::Reply& reply, const ApiError& error) {
        (error.status >= 500 ? failed : rejected) += 1;
        send_json(reply, error.status, error.body());
    }

    // On an HTTP thread: cheap routes answer here, completions go to the request threads.
    void route(http::Request&& request, std::shared_ptr<http::Reply> reply) {
        const std::string& path = request.path;
        if (request.method == "OPTIONS") return preflight(request, *reply);
        if (!options.api_key.empty() && path != "/health") {
            constexpr std::string_view bearer = "Bearer ";
            const std::string_view authorization = request.header("Authorization");
            if (!authorization.starts_with(bearer) || !same_secret(authorization.substr(bearer.size()), options.api_key))
                return refuse(*reply, ApiError(401, "a valid API key is needed: send 'Authorization: Bearer KEY'",
                                               "invalid_request_error", "invalid_api_key"));
        }
        const bool get = request.method == "GET", post = request.method == "POST";
        if (path == "/health" || path == "/v1/models" || path == "/metrics" || path.starts_with("/v1/models/")) {
            if (!get) return wrong_method(*reply, "GET");
            if (path == "/health") return send_json(*reply, 200, {{"status", "ok"}});
            if (path == "/metrics") return reply->send(200, "text/plain; version=0.0.4", metrics());
            if (path == "/v1/models") return send_json(*reply, 200, {{"object", "list"}, {"data", json::array({model_object()})}});
            const std::string id = percent_decoded(std::string_view(path).substr(std::string_view("/v1/models/").size()));
            if (id != options.model_id) return refuse(*reply, model_not_found(id));
            return send_json(*reply, 200, model_object());
        }
        std::optional<Endpoint> endpoint;
        if (path == "/v1/chat/completions" || path == "/chat/completions") endpoint = Endpoint::ChatCompletions;
        if (path == "/v1/completions" || path == "/completions") endpoint = Endpoint::Completions;
        const bool embeddings = path == "/v1/embeddings" || path == "/embeddings";
        if (path == "/apply-template") {  // llama-server's: the prompt a chat request renders, not run
            if (!post) return wrong_method(*reply, "POST");
            // The request travels whole: its body stays counted in the server's body budget until dropped.
            return on_request_thread(reply, [this, request = std::move(request), reply] {
                send_json(*reply, 200, {{"prompt", render(parse_request(Endpoint::ChatCompletions, request.body, {.images = true}))}});
            });
        }
        if (!endpoint && !embeddings)
            return refuse(*reply, ApiError(404, fmt::format("no such route '{}': see GET /v1/models, POST /v1/chat/completions, "
                                                            "POST /v1/completions and POST /v1/embeddings", path),
                                           "invalid_request_error", "not_found"));
        if (!post) return wrong_method(*reply, "POST");
        if (embeddings != !scheduler)
            return refuse(*reply, ApiError(501, embeddings ? "this server runs completions: start it with --embeddings to serve embeddings"
                                                           : "this server serves embeddings only (an encoder model, or --embeddings)",
                                           "invalid_request_error", "not_supported"));
        on_request_thread(reply, [this, endpoint, request = std::move(request), reply] {
            if (endpoint) complete(*endpoint, request.body, reply);
            else embed(request.body, *reply);
        });
    }

    // Runs a request's work on a request thread; what it throws is that request's error.
    template <class Work>
    void on_request_thread(std::shared_ptr<http::Reply> reply, Work work) {
        boost::asio::post(request_threads, [this, reply = std::move(reply), work = std::move(work)]() mutable {
            if (reply->gone()) return;  // its client left while it waited for a thread
            try {
                work();
            } catch (const ApiError& error) {
                refuse(*reply, error);
            } catch (const std::exception& error) {
                refuse(*reply, ApiError(500, fmt::format("the request failed: {}", error.what()), "server_error"));
            }
        });
    }

    // On a request thread: the inputs tokenized, then embedded one request at a time. A request whose
    // client leaves stops at its next input, so the next request waits one input at the most.
    void embed(const std::string& body, http::Reply& reply) {
        EmbeddingRequest request = parse_embedding_request(body);
        if (!request.model.empty() && request.model != options.model_id) throw model_not_found(request.model);
        std::vector<std::vector<int32_t>> inputs = std::move(request.token_lists);
        for (const std::string& text : request.texts) {
            check_prompt_bytes(text.size(), "input");
            inputs.push_back(embedder->tokenize(text));
        }
        size_t n_tokens = 0;
        for (const auto& input : inputs) n_tokens += input.size();
        std::vector<std::vector<float>> vectors;
        {
            std::lock_guard lock(embedding);
            try {
                vectors = embedder->embed(inputs, [&] { return reply.gone() || shutting_down; });
            } catch (const Error& error) {
                throw ApiError(400, error.what(), "invalid_request_error", "invalid_value", "input");
            }
        }
        if (reply.gone()) return;
        if (vectors.size() < inputs.size()) throw ApiError(503, "the server is shutting down", "server_error");
        embedded += 1;
        send_json(reply, 200, embedding_response(options.model_id, vectors, request.base64, n_tokens));
    }

    void preflight(const http::Request& request, http::Reply& reply) {
        const std::string_view asked = request.header("Access-Control-Request-Headers");
        reply.send(204, {}, {},
                   {{"Access-Control-Allow-Methods", "GET, POST, OPTIONS"},
                    {"Access-Control-Allow-Headers", asked.empty() ? "Authorization, Content-Type" : std::string(asked)},
                    {"Access-Control-Max-Age", "86400"}});
    }

    void wrong_method(http::Reply& reply, const char* allowed) {
        rejected += 1;
        reply.send(405, "application/json",
                   to_text(ApiError(405, fmt::format("this route takes {} only", allowed), "invalid_request_error",
                                    "method_not_allowed").body()),
                   {{"Allow", fmt::format("{}, OPTIONS", allowed)}});
    }

    ApiError model_not_found(const std::string& id) const {
        return ApiError(404, fmt::format("the model '{}' does not exist: this server serves '{}'", id, options.model_id),
                        "invalid_request_error", "model_not_found", "model");
    }

    json model_object() {
        const model::ModelInfo& info = engine.info();
        return {{"id", options.model_id},
                {"object", "model"},
                {"created", 0},
                {"owned_by", "vkllm"},
                {"meta", {{"arch", info.arch}, {"n_ctx", engine.session().n_ctx()}, {"n_vocab", info.n_vocab},
                          {"n_parallel", engine.session().n_seq()}}}};
    }

    std::string metrics() {
        const engine::SchedulerMetrics m = scheduler ? scheduler->metrics() : engine::SchedulerMetrics{};
        std::string text;
        auto metric = [&](const char* name, const char* type, const char* help, double value) {
            text += fmt::format("# HELP vkllm_{0} {1}\n# TYPE vkllm_{0} {2}\nvkllm_{0} {3}\n", name, help, type, value);
        };
        metric("requests_total", "counter", "Completion requests finished.", double(m.requests_finished));
        metric("embedding_requests_total", "counter", "Embedding requests answered.", double(embedded.load()));
        metric("requests_rejected_total", "counter", "Requests answered with a 4xx error.", double(rejected.load()));
        metric("requests_failed_total", "counter", "Requests answered with a 5xx error (or an error event).", double(failed.load()));
        metric("http_connections", "gauge", "Open client connections.", double(http.connections()));
        metric("prompt_tokens_total", "counter", "Prompt tokens of finished and running requests.", double(m.prompt_tokens + m.cached_prompt_tokens));
        metric("prompt_tokens_cached_total", "counter", "Prompt tokens whose KV cells were reused.", double(m.cached_prompt_tokens));
        metric("generated_tokens_total", "counter", "Tokens generated by finished requests.", double(m.generated_tokens));
        metric("decode_steps_total", "counter", "Batched decode steps run.", double(m.decode_steps));
        metric("prompt_tokens_per_second", "gauge", "Prompt tokens computed per second of prefill.",
               m.prompt_seconds > 0 ? double(m.prompt_tokens) / m.prompt_seconds : 0.0);
        metric("generated_tokens_per_second", "gauge", "Tokens generated per second of decode steps, all sequences together.",
               m.decode_seconds > 0 ? double(m.generated_tokens) / m.decode_seconds : 0.0);
        metric("requests_processing", "gauge", "Requests holding a sequence.", double(m.active));
        metric("requests_queued", "gauge", "Requests waiting for a sequence.", double(m.queued));
        metric("kv_cells_used", "gauge", "KV-cache cells holding tokens, all sequences.", double(m.cells_in_use));
        metric("kv_cells_total", "gauge", "KV-cache cells of all sequences.", double(m.cells_total));
        return text;
    }

    // What the reply must match: a forced tool call's grammar, or the request's grammar or JSON Schema.
    std::shared_ptr<const sampling::Grammar> constraint(const CompletionRequest& request) const {
        try {
            if (calls_forced(request)) {
                nlohmann::ordered_json tools = nlohmann::ordered_json::array();
                for (const auto& tool : request.tools)
                    if (request.tool_choice != ToolChoice::Named || tool["function"]["name"] == request.tool_name) tools.push_back(tool);
                return chat::call_grammar(tool_format.syntax, tools, request.parallel_tool_calls);
            }
            if (!request.grammar.empty()) return sampling::Grammar::parse(request.grammar);
            if (!request.json_schema.is_null())
                return sampling::json_schema_grammar(request.json_schema, {.strict = request.json_schema_strict});
        } catch (const Error& error) {
            const std::string field = constraint_field(request);
            throw ApiError(400, fmt::format("'{}': {}", field, error.what()), "invalid_request_error", "invalid_value", field);
        }
        return nullptr;
    }

    // The field that gave the reply's grammar, for its errors.
    static std::string constraint_field(const CompletionRequest& request) {
        return calls_forced(request) ? "tools" : request.constraint_field;
    }

    static bool calls_forced(const CompletionRequest& request) {
        return request.tool_choice == ToolChoice::Required || request.tool_choice == ToolChoice::Named;
    }

    // The longest prompt text that may still fit the context (0: no bound).
    size_t prompt_byte_bound() const {
        return longest_piece == 0 ? 0 : (size_t(engine.session().n_ctx()) + 1) * longest_piece;
    }

    ApiError prompt_too_long(size_t n_tokens_at_least, const char* param) const {
        return ApiError(400, fmt::format("the prompt's {} tokens leave no room to generate in the context of {} tokens",
                                         n_tokens_at_least, engine.session().n_ctx()),
                        "invalid_request_error", "context_length_exceeded", param);
    }

    void check_prompt_bytes(size_t bytes, const char* param) const {
        const size_t bound = prompt_byte_bound();
        if (bound != 0 && bytes > bound)
            throw ApiError(400, fmt::format("the prompt's {} bytes cannot fit the context of {} tokens", bytes, engine.session().n_ctx()),
                           "invalid_request_error", "context_length_exceeded", param);
    }

    // A chat's prompt text: the messages (and tools) through the model's template.
    std::string render(const CompletionRequest& request) const {
        std::string rendered;
        try {
            if (request.tools.is_null()) {
                rendered = engine.chat_template().render(request.messages, true);
            } else {
                const chat::ToolPrompt tools = chat::tool_prompt(tool_format, request.messages, request.tools);
                rendered = engine.chat_template().render(tools.messages, true, {}, tools.variables);
            }
        } catch (const Error& error) {
            throw ApiError(400, fmt::format("the chat template cannot render these messages: {}", error.what()),
                           "invalid_request_error", "invalid_value", "messages");
        }
        // A reply that must call a tool starts with the call's opening, as if the model had written it.
        if (calls_forced(request)) rendered += chat::call_opening(tool_format.syntax);
        return rendered;
    }

    // The engine's request: the prompt rendered and tokenized (with images, its chunks; the images
    // move out of `request`) and the sampling; the limits are left to fill.
    engine::Request prompt_of(CompletionRequest& request) const {
        const tokenizer::Tokenizer& tokenizer = engine.tokenizer();
        engine::Request prompt{.sampling = request.sampling};
        if (!request.prompt_tokens.empty()) {
            prompt.prompt = request.prompt_tokens;
            return prompt;
        }
        if (request.endpoint == Endpoint::Completions) {
            check_prompt_bytes(request.prompt.size(), "prompt");
            prompt.prompt = tokenizer.tokenize(request.prompt, true, true);
            return prompt;
        }
        const std::string rendered = render(request);
        check_prompt_bytes(rendered.size(), "messages");
        if (request.images.empty()) {
            prompt.prompt = chat::prompt_tokens(tokenizer, rendered);
            return prompt;
        }
        try {
            prompt.chunks = vision::tokenize_with_media(tokenizer, engine.encoder()->hparams().projector,
                                                        chat::without_template_bos(tokenizer, rendered), request.images.size());
        } catch (const Error& error) {
            throw ApiError(400, error.what(), "invalid_request_error", "invalid_value", "messages");
        }
        for (const vision::PromptChunk& chunk : prompt.chunks) prompt.prompt.insert(prompt.prompt.end(), chunk.tokens.begin(), chunk.tokens.end());
        prompt.images = std::move(request.images);
        return prompt;
    }

    // On a request thread: parsed, checked against the context, queued; the scheduler answers.
    void complete(Endpoint endpoint, const std::string& body, const std::shared_ptr<http::Reply>& reply) {
        const uint32_t n_ctx = engine.session().n_ctx();
        CompletionRequest request = parse_request(endpoint, body, {.images = engine.encoder() != nullptr,
                                                                   .max_prompt_bytes = prompt_byte_bound(),
                                                                   .n_ctx = n_ctx,
                                                                   .n_vocab = engine.info().n_vocab});
        if (!request.model.empty() && request.model != options.model_id) throw model_not_found(request.model);
        request.sampling.grammar = constraint(request);
        engine::Request prompt = prompt_of(request);
        size_t n_prompt = prompt.prompt.size();
        for (const vision::PromptChunk& chunk : prompt.chunks)
            if (chunk.image >= 0) n_prompt += engine.encoder()->positions(prompt.images[size_t(chunk.image)]);
        if (n_prompt >= n_ctx) throw prompt_too_long(n_prompt, endpoint == Endpoint::ChatCompletions ? "messages" : "prompt");
        // One rule, with max_tokens or without: prompt and reply together fit the context.
        if (request.max_tokens && n_prompt + *request.max_tokens > n_ctx)
            throw ApiError(400, fmt::format("max_tokens {} and the prompt's {} tokens exceed the context of {} tokens",
                                            *request.max_tokens, n_prompt, n_ctx),
                           "invalid_request_error", "context_length_exceeded", "max_tokens");

        engine::GenerationLimits& limits = prompt.limits;
        limits = {.max_tokens = request.max_tokens.value_or(UINT32_MAX), .stops = {.strings = request.stop},
                  .ignore_eos = request.ignore_eos,
                  .control_text = !request.tools.is_null() && request.tool_choice != ToolChoice::None};
        if (endpoint == Endpoint::ChatCompletions) {
            const engine::StopSet& template_stops = engine.template_stops();
            limits.stops.tokens = template_stops.tokens;
            limits.stops.strings.insert(limits.stops.strings.end(), template_stops.strings.begin(), template_stops.strings.end());
        }
        auto exchange = std::make_shared<Exchange>(Exchange{.reply = reply, .failed = failed, .rejected = rejected});
        exchange->constraint_field = constraint_field(request);
        exchange->context = {endpoint, fmt::format("{}-{:x}", endpoint == Endpoint::ChatCompletions ? "chatcmpl" : "cmpl", next_id++),
                             options.model_id, int64_t(std::time(nullptr))};
        exchange->stream = request.stream;
        exchange->tokenizer = &engine.tokenizer();
        exchange->logprobs_asked = request.sampling.top_logprobs >= 0;
        if (!request.tools.is_null() && request.tool_choice != ToolChoice::None) {
            exchange->splitter.emplace(tool_format.syntax);
            if (calls_forced(request)) exchange->splitter->push(chat::call_opening(tool_format.syntax));
        }
        exchange->include_usage = request.include_usage;
        if (request.echo)
            exchange->echo = request.prompt_tokens.empty() ? request.prompt
                                                           : engine.tokenizer().detokenize(request.prompt_tokens, false, true);
        bool queued = false;
        try {
            queued = scheduler->submit(std::move(prompt), Exchange::listener(exchange));
        } catch (const Error& error) {
            throw ApiError(shutting_down ? 503 : 400, error.what(), shutting_down ? "server_error" : "invalid_request_error");
        }
        if (!queued)
            throw ApiError(503, "the server is busy: every sequence is in use and the queue is full; try again later",
                           "server_error", "queue_full");
    }
};

Server::Server(engine::Engine& engine, engine::Scheduler* scheduler, ServerOptions options)
    : impl_(std::make_unique<Impl>(engine, scheduler, std::move(options))) {}

Server::~Server() { shutdown(); }

int Server::start() { return impl_->http.listen(impl_->options.host, impl_->options.port); }

void Server::shutdown() {
    Impl& impl = *impl_;
    if (impl.shutting_down.exchange(true)) return;
    impl.http.stop_accepting();
    // Requests being parsed are refused by the stopped scheduler; those it runs end now, answered.
    if (impl.scheduler) impl.scheduler->stop();
    impl.request_threads.join();
    impl.http.drain(std::chrono::seconds(5));
    impl.http.stop();
}

}  // namespace vkllm::server
