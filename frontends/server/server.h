#pragma once
// The HTTP front of `vkllm serve`: OpenAI's routes over the engine's scheduler.
//   POST /v1/chat/completions, POST /v1/completions (stream: server-sent events), GET /v1/models,
//   GET /health, GET /metrics (Prometheus text).
// Every error is OpenAI's shape ({"error": {"message", "type", "code", "param"}}) with a 4xx/5xx status;
// one client's bad request or disconnect never touches the others' requests.
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "engine/engine.h"
#include "engine/scheduler.h"
#include "openai.h"

namespace httplib {
class Server;
struct Response;
}

namespace vkllm::server {

struct ServerOptions {
    std::string host = "127.0.0.1";
    int port = 8080;
    std::string api_key;                      // empty: no key asked for
    std::string model_id;                     // the name /v1/models lists and requests may give
    uint64_t max_body_bytes = 32ull << 20;    // larger bodies are refused with 413
    uint32_t http_threads = 16;
};

class Server {
public:
    Server(engine::Engine& engine, engine::Scheduler& scheduler, ServerOptions options);
    ~Server();

    // Binds the address; throws vkllm::Error when it cannot (in use, no such address). Returns the port.
    int bind();
    // Serves until stop(); returns once the listener is closed.
    void listen();
    // Safe from any thread (a signal watcher): stops accepting and returns from listen().
    void stop();

private:
    void routes();
    // A completion request: parsed, checked against the context, queued, answered whole or streamed.
    void complete(Endpoint endpoint, const std::string& body, httplib::Response& res);
    std::vector<tokenizer::TokenId> prompt_of(const CompletionRequest& request) const;

    engine::Engine& engine_;
    engine::Scheduler& scheduler_;
    ServerOptions options_;
    std::unique_ptr<httplib::Server> http_;
    std::atomic<uint64_t> next_id_{1}, rejected_{0};
};

}  // namespace vkllm::server
