#pragma once
// The HTTP front of `vkllm serve`: OpenAI's routes over the engine's scheduler.
//   POST /v1/chat/completions, POST /v1/completions (stream: server-sent events), GET /v1/models,
//   GET /v1/models/{id}, GET /health, GET /metrics (Prometheus text), OPTIONS (CORS preflight),
//   POST /apply-template (llama-server's: the prompt a chat request renders);
//   or, serving embeddings (an encoder, or --embeddings), POST /v1/embeddings in place of completions.
// Every error is OpenAI's shape ({"error": {"message", "type", "code", "param"}}) with a 4xx/5xx status;
// one client's bad request, slow connection or disconnect never touches the others' requests.
// Requests are parsed, rendered and tokenized on a small pool of threads of their own, so neither the
// HTTP threads (http.h) nor the scheduler's wait on them.
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "engine/engine.h"
#include "engine/scheduler.h"
#include "http.h"
#include "openai.h"

namespace vkllm::server {

struct ServerOptions {
    std::string host = "127.0.0.1";
    int port = 8080;
    std::string api_key;       // empty: no key asked for
    std::string model_id;      // the name /v1/models lists and requests may give
    http::Limits limits;       // body size, deadlines, connections
    unsigned request_threads = 4;  // parse, render and tokenize requests
};

class Server {
public:
    // Completions run on `scheduler`; without one the server serves embeddings of the engine's model
    // (its sequence 0), one request at a time.
    Server(engine::Engine& engine, engine::Scheduler* scheduler, ServerOptions options);
    ~Server();

    // Binds the address and serves on threads of its own; throws vkllm::Error when it cannot bind.
    // Returns the port (a free one for port 0).
    int start();
    // Ends the requests in flight (streams get their last chunk, with finish_reason "length", and
    // [DONE]), answers the requests still arriving with 503, and returns once every answer is out
    // (at most a few seconds) and the connections are closed. Stops the scheduler, if any.
    void shutdown();

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace vkllm::server
