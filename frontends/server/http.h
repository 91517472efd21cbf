#pragma once
// An HTTP/1.1 server that slow, idle or hostile clients cannot starve. Connections are asynchronous
// (Boost.Asio; requests parsed by Boost.Beast), so a connection holds a socket and a buffer, never a
// thread, whatever its client does:
// - a request's header and body must arrive within one deadline from its first byte (a byte a second
//   does not renew it), and an idle keep-alive connection is closed after its own timeout;
// - header bytes, header fields, body bytes (one body's, and all connections' bodies together) and
//   connections are bounded; a response that the client stops reading is dropped after a stall, and
//   its requests are told their client is gone;
// - pipelined requests are read ahead (a few) and answered in order; past those the connection reads
//   nothing until an answer is out, but still notices its client leaving, which cancels every request
//   it started;
// - TCP_NODELAY, a response's header and body in one write, and a header's ACK sent at once when a
//   body is still to come (a client that writes them apart would wait out a delayed ACK).
// Handlers run on the connection's I/O thread and must return at once: one that computes hands the
// work to another thread and answers through its Reply, from any thread, whenever it is ready.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vkllm::server::http {

using Headers = std::vector<std::pair<std::string, std::string>>;

struct BodyBudget;

// Bytes of request bodies counted against the server's budget (Limits::max_buffered_body_bytes), from
// the header that announces them until the lease is dropped.
class BodyLease {
public:
    BodyLease() = default;
    explicit BodyLease(std::shared_ptr<BodyBudget> budget) : budget_(std::move(budget)) {}
    BodyLease(BodyLease&& other) noexcept : budget_(std::move(other.budget_)), bytes_(std::exchange(other.bytes_, 0)) {}
    BodyLease& operator=(BodyLease&& other) noexcept;
    ~BodyLease() { release(); }

    // Holds `bytes` in all (more or fewer than now); false, holding what it held, when the budget lacks them.
    bool resize(uint64_t bytes);
    uint64_t bytes() const { return bytes_; }

private:
    void release();
    std::shared_ptr<BodyBudget> budget_;
    uint64_t bytes_ = 0;
};

struct Request {
    std::string method;  // as sent: "GET", "POST", "OPTIONS"...
    std::string path;    // the target up to '?'
    std::string query;   // after '?', undecoded
    Headers headers;
    std::string body;
    BodyLease body_lease;  // whoever keeps the body keeps this with it


    // The first header of that name (case-insensitive); empty when absent.
    std::string_view header(std::string_view name) const;
};

class Connection;
struct ReplyPolicy;

// The answer to one request: either send() once, or begin_stream(), any number of write()s, then
// end(). Callable from any thread; what is written leaves in the order of the connection's requests.
class Reply {
public:
    void send(int status, std::string_view content_type, std::string body, const Headers& headers = {});
    // A response of unknown length (chunked; HTTP/1.0 clients get it raw, then the connection closes).
    void begin_stream(int status, std::string_view content_type, const Headers& headers = {});
    void write(std::string_view data);
    void end();

    // The client closed its connection, stopped reading, or the server is closing it: whatever is
    // still written is dropped, and work for this request can stop.
    bool gone() const { return gone_.load(); }

private:
    friend class Connection;
    Reply(std::weak_ptr<Connection> connection, std::shared_ptr<const ReplyPolicy> policy, bool http_1_0, bool keep_alive)
        : connection_(std::move(connection)), policy_(std::move(policy)), http_1_0_(http_1_0), keep_alive_(keep_alive) {}
    std::string head(int status, std::string_view content_type, const Headers& headers, std::string_view length_header) const;
    void wake();  // asks the connection to send what is pending

    std::weak_ptr<Connection> connection_;
    std::shared_ptr<const ReplyPolicy> policy_;
    const bool http_1_0_;
    bool keep_alive_;  // cleared when the server closes the connection after this response

    std::mutex mutex_;
    std::string pending_;    // bytes not yet handed to the socket
    bool begun_ = false;     // status line sent or queued
    bool streaming_ = false;
    bool ended_ = false;     // the last byte is in pending_ (or sent)
    std::atomic<bool> gone_{false};
};

struct Limits {
    size_t max_header_bytes = 16 << 10;  // request line and headers together
    size_t max_header_fields = 100;
    uint64_t max_body_bytes = 32ull << 20;
    // Bodies of all connections together, being read or held by the handler: a request past it is a 503.
    uint64_t max_buffered_body_bytes = 128ull << 20;
    std::chrono::milliseconds request_deadline{30'000};  // from a request's first byte to its last
    std::chrono::milliseconds idle_timeout{60'000};      // a kept-alive connection with nothing to do
    std::chrono::milliseconds write_stall{60'000};       // a response the client reads nothing of
    size_t max_pending_bytes = 64ull << 20;              // written but not yet taken by the client
    size_t max_connections = 4096;
    size_t max_pipelined = 8;  // requests of one connection read ahead of their answers
};

struct ServerOptions {
    Limits limits;
    unsigned io_threads = 2;
    Headers response_headers;  // on every response (CORS, ...)
    // The body of an error the HTTP layer answers itself (400, 408, 413, 431, 503): status, message.
    std::function<std::string(int, std::string_view)> error_body;
};

using Handler = std::function<void(Request&& request, std::shared_ptr<Reply> reply)>;

class Server {
public:
    Server(ServerOptions options, Handler handler);
    ~Server();
    Server(const Server&) = delete;
    Server& operator=(const Server&) = delete;

    // Binds and starts accepting on I/O threads of its own; throws vkllm::Error when it cannot bind.
    // Port 0 picks a free one. Returns the bound port.
    int listen(const std::string& host, int port);
    // Stops accepting; requests still arriving on open connections are answered 503 (connection
    // closed after), and every connection closes once its answers are out.
    void stop_accepting();
    // Waits until every answer begun is written (or its client gone), at most `timeout`. True when
    // nothing is left.
    bool drain(std::chrono::milliseconds timeout);
    // Closes every connection and joins the I/O threads.
    void stop();

    size_t connections() const;

    struct State;  // what the connections share with the server

private:
    std::shared_ptr<State> state_;
};

}  // namespace vkllm::server::http
