// vkllm serve -m MODEL [--mmproj F] [--host 127.0.0.1] [--port 8080] [--parallel 4] [-c CTX] [--api-key KEY]:
// OpenAI's API over HTTP with continuous batching of N sequences (frontends/server). SIGINT and
// SIGTERM stop it cleanly: requests in flight end with their last chunk, then the process exits 0.
#include <algorithm>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <pthread.h>
#include <sys/resource.h>

#include "core/error.h"
#include "engine/scheduler.h"
#include "model_options.h"
#include "options.h"
#include "server.h"

namespace vkllm::cli {
namespace {

// Every client connection is a file descriptor: take all the process may have. Returns the limit.
size_t raise_open_file_limit() {
    rlimit limit{};
    if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return 1024;
    if (limit.rlim_cur < limit.rlim_max) {
        limit.rlim_cur = limit.rlim_max;
        setrlimit(RLIMIT_NOFILE, &limit);
        getrlimit(RLIMIT_NOFILE, &limit);
    }
    return size_t(std::max<rlim_t>(limit.rlim_cur, 128));
}

}  // namespace

int serve(Args args) {
    ModelOptions options;
    server::ServerOptions server_options;
    engine::SchedulerOptions scheduler_options;
    std::string template_path, mmproj_path;
    uint32_t n_parallel = 4, port = uint32_t(server_options.port);
    uint32_t timeout_seconds = uint32_t(server_options.limits.request_deadline.count() / 1000);
    bool embeddings = false;
    Options parser("serve", "-m MODEL [--host ADDR] [--port N] [--parallel N] [options]",
                   "OpenAI's API (/v1/chat/completions, /v1/completions, /v1/models, /health, /metrics) over HTTP, "
                   "decoding up to --parallel requests in one batch; -c is each request's context.");
    parser.add("--host", server_options.host, "ADDR", "the address to listen on")
        .add("--port", port, "N", "the port; 0: any free one (printed)")
        .add("-np,--parallel", n_parallel, "N", "requests decoded at once (sequences in the KV cache); more wait in a queue")
        .add("--api-key", server_options.api_key, "KEY", "ask every request but /health for 'Authorization: Bearer KEY'")
        .add("-a,--alias", server_options.model_id, "NAME", "the model's name in /v1/models and requests; default: the file's")
        .add("--mmproj", mmproj_path, "FILE", "the model's image encoder: chat messages may then hold image_url data URIs")
        .add("--chat-template-file", template_path, "FILE", "a Jinja chat template replacing the model's")
        .add("--prefill-chunk", scheduler_options.prefill_chunk, "N",
             "prompt tokens one step runs: a new prompt delays the others' next token by one such chunk")
        .add("--timeout", timeout_seconds, "S", "seconds a request's header and body may take to arrive, from its first byte")
        .flag("--embeddings", embeddings, "serve POST /v1/embeddings (pooled hidden states) instead of completions; "
                                          "an encoder model (BERT) always does");
    options.declare(parser);
    if (!parser.parse(args)) return 0;
    options.check();
    if (port > 65535) fail("--port must be at most 65535, not {}", port);
    server_options.port = int(port);
    if (n_parallel == 0 || n_parallel > 64) fail("--parallel must be between 1 and 64, not {}", n_parallel);
    if (scheduler_options.prefill_chunk == 0) fail("--prefill-chunk must be at least 1 token");
    if (timeout_seconds == 0 || timeout_seconds > 3600) fail("--timeout must be between 1 and 3600 seconds, not {}", timeout_seconds);
    server_options.limits.request_deadline = std::chrono::seconds(timeout_seconds);
    server_options.limits.max_connections = std::min(server_options.limits.max_connections, raise_open_file_limit() - 64);
    if (server_options.model_id.empty()) server_options.model_id = std::filesystem::path(options.model_path).stem().string();

    // Signals reach this thread alone, in sigwait: every thread started from here on inherits the mask.
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

    std::unique_ptr<engine::Engine> engine = open_engine(options, mmproj_path, template_path, n_parallel);
    // An encoder (BERT) only embeds; a decoder serves embeddings instead of completions when asked.
    embeddings = embeddings || engine->info().encoder;
    std::optional<engine::Scheduler> scheduler;
    if (!embeddings) scheduler.emplace(*engine, scheduler_options);
    server::Server server(*engine, scheduler ? &*scheduler : nullptr, server_options);
    const int bound_port = server.start();
    std::fprintf(stderr, "vkllm serve: %s on http://%s:%d/v1 (%s)\n", server_options.model_id.c_str(),
                 server_options.host.c_str(), bound_port,
                 embeddings ? fmt::format("embeddings of up to {} tokens", engine->session().n_ctx()).c_str()
                            : fmt::format("{} sequences of {} tokens", n_parallel, engine->session().n_ctx()).c_str());
    int signal = 0;
    sigwait(&stop_signals, &signal);
    std::fprintf(stderr, "vkllm serve: stopping: ending the requests in flight\n");
    server.shutdown();
    std::fprintf(stderr, "vkllm serve: stopped\n");
    return 0;
}

}  // namespace vkllm::cli
