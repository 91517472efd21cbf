#include "server.h"

#include <chrono>
#include <condition_variable>
#include <ctime>
#include <mutex>
#include <optional>

#include <fmt/format.h>
#include <httplib.h>

#include "chat/prompt.h"
#include "core/error.h"
#include "openai.h"
#include "vision/prompt.h"

namespace vkllm::server {
namespace {

using json = nlohmann::ordered_json;

void send_json(httplib::Response& res, int status, const json& body) {
    res.status = status;
    res.set_content(body.dump(), "application/json");
}

void send_error(httplib::Response& res, const ApiError& error) { send_json(res, error.status, error.body()); }

// One request between the scheduler's thread, which produces its text, and the HTTP thread that
// sends it. Shared by both, so either may finish first.
struct Exchange {
    std::mutex mutex;
    std::condition_variable changed;
    std::string text;                         // produced, not yet sent
    std::optional<engine::Completion> done;
    std::atomic<bool> gone{false};            // the client left: the scheduler drops the request

    static engine::RequestListener listener(const std::shared_ptr<Exchange>& exchange) {
        return {.on_text = [exchange](std::string_view piece) {
                    {
                        std::lock_guard lock(exchange->mutex);
                        exchange->text += piece;
                    }
                    exchange->changed.notify_all();
                    return !exchange->gone.load();
                },
                .on_done = [exchange](const engine::Completion& completion) {
                    {
                        std::lock_guard lock(exchange->mutex);
                        exchange->done = completion;
                    }
                    exchange->changed.notify_all();
                },
                .cancelled = [exchange] { return exchange->gone.load(); }};
    }
};

// How long a stream waits for text before it sends an SSE comment: a write to a client that left
// fails, which frees its sequence even while it waits in the queue or its prompt runs.
constexpr auto keep_alive_interval = std::chrono::seconds(2);

std::string sse_event(const json& body) { return "data: " + body.dump() + "\n\n"; }

std::string error_message_for(int status, const httplib::Request& req) {
    switch (status) {
        case 404: return "no such route: see GET /v1/models, POST /v1/chat/completions and POST /v1/completions";
        case 405: return "this route does not take that method";
        case 413:
            // cpp-httplib caps form-encoded bodies (what `curl -d` sends unless told otherwise) at 8 KiB.
            if (req.get_header_value("Content-Type").starts_with("application/x-www-form-urlencoded"))
                return "a body sent as application/x-www-form-urlencoded is limited to 8 KiB: send JSON with "
                       "'Content-Type: application/json'";
            return "the request body is larger than the server accepts";
        default: return fmt::format("the request failed with HTTP status {}", status);
    }
}

}  // namespace

Server::Server(engine::Engine& engine, engine::Scheduler& scheduler, ServerOptions options)
    : engine_(engine), scheduler_(scheduler), options_(std::move(options)), http_(std::make_unique<httplib::Server>()) {
    routes();
}

Server::~Server() = default;

int Server::bind() {
    if (options_.port == 0) {
        const int port = http_->bind_to_any_port(options_.host);
        if (port < 0) fail("cannot listen on {}: the address is not this machine's", options_.host);
        return port;
    }
    if (!http_->bind_to_port(options_.host, options_.port))
        fail("cannot listen on {}:{}: the port is in use or the address is not this machine's", options_.host, options_.port);
    return options_.port;
}

void Server::listen() { http_->listen_after_bind(); }

void Server::stop() { http_->stop(); }

void Server::routes() {
    httplib::Server& http = *http_;
    const uint32_t threads = options_.http_threads;
    http.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
    http.set_payload_max_length(options_.max_body_bytes);

    http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
        if (options_.api_key.empty() || req.path == "/health") return httplib::Server::HandlerResponse::Unhandled;
        if (req.get_header_value("Authorization") == "Bearer " + options_.api_key)
            return httplib::Server::HandlerResponse::Unhandled;
        rejected_ += 1;
        send_error(res, ApiError(401, "a valid API key is needed: send 'Authorization: Bearer KEY'",
                                 "invalid_request_error", "invalid_api_key"));
        return httplib::Server::HandlerResponse::Handled;
    });
    http.set_error_handler([this](const httplib::Request& req, httplib::Response& res) {
        if (!res.body.empty()) return;
        rejected_ += 1;
        send_error(res, ApiError(res.status, error_message_for(res.status, req)));
    });
    http.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr thrown) {
        std::string message = "internal error";
        try {
            std::rethrow_exception(thrown);
        } catch (const std::exception& error) {
            message = error.what();
        } catch (...) {
        }
        send_error(res, ApiError(500, message, "server_error"));
    });

    http.Get("/health", [](const httplib::Request&, httplib::Response& res) { send_json(res, 200, {{"status", "ok"}}); });
    http.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
        const model::ModelInfo& info = engine_.info();
        send_json(res, 200, {{"object", "list"},
                             {"data", json::array({{{"id", options_.model_id},
                                                    {"object", "model"},
                                                    {"created", 0},
                                                    {"owned_by", "vkllm"},
                                                    {"meta", {{"arch", info.arch},
                                                              {"n_ctx", engine_.session().n_ctx()},
                                                              {"n_vocab", info.n_vocab},
                                                              {"n_parallel", engine_.session().n_seq()}}}}})}});
    });
    http.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
        const engine::SchedulerMetrics m = scheduler_.metrics();
        std::string text;
        auto metric = [&](const char* name, const char* type, const char* help, double value) {
            text += fmt::format("# HELP vkllm_{0} {1}\n# TYPE vkllm_{0} {2}\nvkllm_{0} {3}\n", name, help, type, value);
        };
        metric("requests_total", "counter", "Completion requests finished.", double(m.requests_finished));
        metric("requests_rejected_total", "counter", "Requests answered with an error before running.", double(rejected_.load()));
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
        res.set_content(text, "text/plain; version=0.0.4");
    });

    auto completion_route = [this](Endpoint endpoint) {
        return [this, endpoint](const httplib::Request& req, httplib::Response& res) {
            try {
                complete(endpoint, req.body, res);
            } catch (const ApiError& error) {
                rejected_ += 1;
                send_error(res, error);
            }
        };
    };
    http.Post("/v1/chat/completions", completion_route(Endpoint::ChatCompletions));
    http.Post("/v1/completions", completion_route(Endpoint::Completions));
    http.Post("/chat/completions", completion_route(Endpoint::ChatCompletions));
    http.Post("/completions", completion_route(Endpoint::Completions));
}

engine::Request Server::prompt_of(CompletionRequest& request) const {
    const tokenizer::Tokenizer& tokenizer = engine_.tokenizer();
    engine::Request prompt{.sampling = request.sampling};
    if (!request.prompt_tokens.empty()) {
        prompt.prompt = request.prompt_tokens;
        return prompt;
    }
    if (request.endpoint == Endpoint::Completions) {
        prompt.prompt = tokenizer.tokenize(request.prompt, true, true);
        return prompt;
    }
    if (!request.images.empty() && !engine_.encoder())
        throw ApiError(400, "this server has no image encoder for image_url parts: start it with --mmproj",
                       "invalid_request_error", "unsupported_content", "messages");
    std::string rendered;
    try {
        rendered = engine_.chat_template().render(request.messages, true);
    } catch (const Error& error) {
        throw ApiError(400, fmt::format("the chat template cannot render these messages: {}", error.what()),
                       "invalid_request_error", "invalid_value", "messages");
    }
    if (request.images.empty()) {
        prompt.prompt = chat::prompt_tokens(tokenizer, rendered);
        return prompt;
    }
    try {
        prompt.chunks = vision::tokenize_with_media(tokenizer, engine_.encoder()->hparams().projector,
                                                    chat::without_template_bos(tokenizer, rendered), request.images.size());
    } catch (const Error& error) {
        throw ApiError(400, error.what(), "invalid_request_error", "invalid_value", "messages");
    }
    for (const vision::PromptChunk& chunk : prompt.chunks) prompt.prompt.insert(prompt.prompt.end(), chunk.tokens.begin(), chunk.tokens.end());
    prompt.images = std::move(request.images);
    return prompt;
}

void Server::complete(Endpoint endpoint, const std::string& body, httplib::Response& res) {
    CompletionRequest request = parse_request(endpoint, body);
    if (!request.model.empty() && request.model != options_.model_id)
        throw ApiError(404, fmt::format("the model '{}' does not exist: this server serves '{}'", request.model, options_.model_id),
                       "invalid_request_error", "model_not_found", "model");
    engine::Request prompt = prompt_of(request);
    size_t n_prompt = prompt.prompt.size();
    for (const vision::PromptChunk& chunk : prompt.chunks)
        if (chunk.image >= 0) n_prompt += engine_.encoder()->positions(prompt.images[size_t(chunk.image)]);
    const uint32_t n_ctx = engine_.session().n_ctx();
    if (n_prompt >= n_ctx)
        throw ApiError(400, fmt::format("the prompt's {} tokens leave no room to generate in the context of {} tokens",
                                        n_prompt, n_ctx), "invalid_request_error", "context_length_exceeded", "messages");
    if (request.max_tokens && n_prompt + *request.max_tokens > n_ctx)
        throw ApiError(400, fmt::format("max_tokens {} and the prompt's {} tokens exceed the context of {} tokens",
                                        *request.max_tokens, n_prompt, n_ctx),
                       "invalid_request_error", "context_length_exceeded", "max_tokens");

    engine::GenerationLimits& limits = prompt.limits;
    limits = {.max_tokens = request.max_tokens.value_or(UINT32_MAX), .stops = {.strings = request.stop}};
    if (endpoint == Endpoint::ChatCompletions) {
        const engine::StopSet& template_stops = engine_.template_stops();
        limits.stops.tokens = template_stops.tokens;
        limits.stops.strings.insert(limits.stops.strings.end(), template_stops.strings.begin(), template_stops.strings.end());
    }
    auto exchange = std::make_shared<Exchange>();
    try {
        if (!scheduler_.submit(std::move(prompt), Exchange::listener(exchange)))
            throw ApiError(503, "the server is busy: every sequence is in use and the queue is full; try again later",
                           "server_error", "queue_full");
    } catch (const Error& error) {
        throw ApiError(400, error.what());
    }
    const ResponseContext context{endpoint,
                                  fmt::format("{}-{:x}", endpoint == Endpoint::ChatCompletions ? "chatcmpl" : "cmpl", next_id_++),
                                  options_.model_id, int64_t(std::time(nullptr))};
    if (!request.stream) {
        std::unique_lock lock(exchange->mutex);
        exchange->changed.wait(lock, [&] { return exchange->done.has_value(); });
        if (!exchange->done->error.empty())
            return send_error(res, ApiError(500, exchange->done->error, "server_error"));
        if (exchange->done->finish == engine::FinishReason::Cancelled)
            return send_error(res, ApiError(503, "the server stopped before the request finished", "server_error"));
        return send_json(res, 200, response_body(context, exchange->text, *exchange->done));
    }
    res.set_header("Cache-Control", "no-cache");
    res.set_chunked_content_provider(
        "text/event-stream",
        [exchange, context, include_usage = request.include_usage, first = true](size_t, httplib::DataSink& sink) mutable {
            std::unique_lock lock(exchange->mutex);
            exchange->changed.wait_for(lock, keep_alive_interval, [&] { return !exchange->text.empty() || exchange->done; });
            const std::string text = std::exchange(exchange->text, {});
            const std::optional<engine::Completion> done = exchange->done;
            lock.unlock();
            auto send = [&](const std::string& event) {
                if (sink.write(event.data(), event.size())) return true;
                exchange->gone = true;
                return false;
            };
            if (text.empty() && !done) return send(": waiting\n\n");
            if (!text.empty() && !send(sse_event(text_chunk(context, text, first)))) return false;
            first = text.empty() && first;
            if (!done) return true;
            if (!done->error.empty()) {
                if (!send(sse_event(ApiError(500, done->error, "server_error").body()))) return false;
            } else if (done->finish != engine::FinishReason::Cancelled) {
                if (!send(sse_event(final_chunk(context, *done)))) return false;
                if (include_usage && !send(sse_event(usage_chunk(context, *done)))) return false;
            }
            if (!send("data: [DONE]\n\n")) return false;
            sink.done();
            return true;
        },
        [exchange](bool success) {
            if (!success) exchange->gone = true;
        });
}

}  // namespace vkllm::server
