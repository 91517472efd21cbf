// vkllm serve -m MODEL [--host 127.0.0.1] [--port 8080] [--parallel N] [-c CTX] [--api-key KEY] ...:
// OpenAI's API over HTTP with continuous batching of N sequences (frontends/server). SIGINT and
// SIGTERM stop it cleanly: requests in flight end, then the process exits 0.
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <pthread.h>
#include <thread>

#include "core/error.h"
#include "engine/scheduler.h"
#include "model_options.h"
#include "server.h"

namespace vkllm::cli {
namespace {

constexpr const char* serve_usage =
    "usage: vkllm serve {} [--host ADDR] [--port N] [--parallel N] [--api-key KEY] [--alias NAME] "
    "[--chat-template-file F] [--prefill-chunk N]";

}  // namespace

int serve(Args args) {
    ModelOptions options;
    server::ServerOptions server_options;
    engine::SchedulerOptions scheduler_options;
    std::string template_path;
    uint32_t n_parallel = 4;
    for (size_t i = 0; i < args.size(); ++i) {
        if (options.parse(args, i)) continue;
        const bool has_value = i + 1 < args.size();
        if (args[i] == "--host" && has_value) server_options.host = args[++i];
        else if (args[i] == "--port" && has_value) server_options.port = int(parse_count("--port", args[++i]));
        else if ((args[i] == "--parallel" || args[i] == "-np") && has_value) n_parallel = parse_count(args[i], args[i + 1]), ++i;
        else if (args[i] == "--api-key" && has_value) server_options.api_key = args[++i];
        else if (args[i] == "--alias" && has_value) server_options.model_id = args[++i];
        else if (args[i] == "--chat-template-file" && has_value) template_path = args[++i];
        else if (args[i] == "--prefill-chunk" && has_value) scheduler_options.prefill_chunk = parse_count(args[i], args[i + 1]), ++i;
        else fail("unexpected argument '{}'; {}", args[i], fmt::format(serve_usage, ModelOptions::usage));
    }
    if (options.model_path.empty()) fail(serve_usage, ModelOptions::usage);
    if (server_options.port > 65535) fail("--port must be at most 65535, not {}", server_options.port);
    if (n_parallel == 0 || n_parallel > 64) fail("--parallel must be between 1 and 64, not {}", n_parallel);
    if (server_options.model_id.empty()) server_options.model_id = std::filesystem::path(options.model_path).stem().string();

    // Signals go to a watcher thread alone: every thread started from here on inherits the mask.
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

    std::unique_ptr<engine::Engine> engine = open_engine(options, {}, template_path, n_parallel);
    engine::Scheduler scheduler(*engine, scheduler_options);
    server::Server server(*engine, scheduler, server_options);
    const int port = server.bind();
    std::fprintf(stderr, "vkllm serve: %s on http://%s:%d/v1 (%u sequences of %u tokens)\n",
                 server_options.model_id.c_str(), server_options.host.c_str(), port, n_parallel,
                 engine->session().n_ctx());
    std::thread watcher([&] {
        int signal = 0;
        sigwait(&stop_signals, &signal);
        if (signal != 0) server.stop();
    });
    server.listen();
    // listen() also returns when the listener fails: wake the watcher so it can be joined.
    pthread_kill(watcher.native_handle(), SIGTERM);
    watcher.join();
    scheduler.stop();
    std::fprintf(stderr, "vkllm serve: stopped\n");
    return 0;
}

}  // namespace vkllm::cli
