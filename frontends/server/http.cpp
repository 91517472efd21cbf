#include "http.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <optional>
#include <thread>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <boost/asio.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <fmt/format.h>

#include "core/error.h"

namespace vkllm::server::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;

namespace {

bool iequals(std::string_view a, std::string_view b) {
    return a.size() == b.size() &&
           std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) { return std::tolower(uint8_t(x)) == std::tolower(uint8_t(y)); });
}

std::string_view reason_phrase(int status) {
    switch (status) {
        case 100: return "Continue";
        case 200: return "OK";
        case 204: return "No Content";
        case 400: return "Bad Request";
        case 401: return "Unauthorized";
        case 404: return "Not Found";
        case 405: return "Method Not Allowed";
        case 408: return "Request Timeout";
        case 413: return "Content Too Large";
        case 431: return "Request Header Fields Too Large";
        case 500: return "Internal Server Error";
        case 503: return "Service Unavailable";
        default: return status < 500 ? "Client Error" : "Server Error";
    }
}

}  // namespace

std::string_view Request::header(std::string_view name) const {
    for (const auto& [key, value] : headers)
        if (iequals(key, name)) return value;
    return {};
}

// The bytes the body leases of one server hold together; it outlives the server while a lease does.
struct BodyBudget {
    const uint64_t limit;
    std::atomic<uint64_t> held{0};
};

BodyLease& BodyLease::operator=(BodyLease&& other) noexcept {
    if (this != &other) {
        release();
        budget_ = std::move(other.budget_);
        bytes_ = std::exchange(other.bytes_, 0);
    }
    return *this;
}

bool BodyLease::resize(uint64_t bytes) {
    if (!budget_) return false;
    if (bytes <= bytes_) {
        budget_->held -= bytes_ - bytes;
        bytes_ = bytes;
        return true;
    }
    const uint64_t more = bytes - bytes_;
    uint64_t held = budget_->held.load();
    do {
        if (held + more > budget_->limit) return false;
    } while (!budget_->held.compare_exchange_weak(held, held + more));
    bytes_ = bytes;
    return true;
}

void BodyLease::release() {
    if (budget_) budget_->held -= bytes_;
    bytes_ = 0;
}

// What a reply needs of the server that made it, kept alive by the reply itself: the server may be
// gone while a request's thread still writes.
struct ReplyPolicy {
    Headers response_headers;
    size_t max_pending_bytes;
};

struct Server::State {
    ServerOptions options;
    Handler handler;
    std::shared_ptr<const ReplyPolicy> policy;
    std::shared_ptr<BodyBudget> body_budget;
    asio::io_context io;
    asio::executor_work_guard<asio::io_context::executor_type> work{io.get_executor()};
    std::optional<tcp::acceptor> acceptor;
    std::vector<std::thread> threads;
    std::atomic<bool> accepting{true};

    std::mutex mutex;
    std::condition_variable replies_done;
    std::vector<std::weak_ptr<Connection>> connections;  // guarded by mutex
    size_t open_replies = 0;                             // handed to the handler, not yet written; guarded by mutex
    std::atomic<size_t> open_connections{0};

    std::string error_body(int status, std::string_view message) const {
        return options.error_body ? options.error_body(status, message) : std::string(message);
    }
    void reply_closed() {
        {
            std::lock_guard lock(mutex);
            open_replies -= 1;
        }
        replies_done.notify_all();
    }
};

// One client connection; every member function runs on the connection's strand.
class Connection : public std::enable_shared_from_this<Connection> {
public:
    Connection(std::shared_ptr<Server::State> server, tcp::socket socket)
        : server_(std::move(server)), socket_(std::move(socket)), read_timer_(socket_.get_executor()),
          write_timer_(socket_.get_executor()), hangup_timer_(socket_.get_executor()) {
        server_->open_connections += 1;
    }
    ~Connection() { server_->open_connections -= 1; }

    void start() {
        error_code ignored;
        socket_.set_option(tcp::no_delay(true), ignored);
        socket_.non_blocking(true, ignored);  // peek_client() peeks without waiting
        wait_for_request();
    }
    // From any thread: the connection sends what its replies hold.
    void wake() { asio::post(socket_.get_executor(), [self = shared_from_this()] { self->flush(); }); }
    // From any thread: no new requests; close once the replies are out.
    void close_when_done() {
        asio::post(socket_.get_executor(), [self = shared_from_this()] {
            self->closing_ = true;
            if (self->replies_.empty() && !self->in_request_) self->shut();
        });
    }
    void close_now() { asio::post(socket_.get_executor(), [self = shared_from_this()] { self->shut(); }); }
    tcp::socket::executor_type executor() { return socket_.get_executor(); }

private:
    const Limits& limits() const { return server_->options.limits; }

    // Reads the next request once the client sends one (pipelined ones may be in the buffer already).
    // With the pipeline full nothing is read until flush() makes room; a connection that will read no
    // more requests only watches for its client leaving.
    void wait_for_request() {
        if (closed_ || in_request_) return;
        if (waiting_) {
            // An answer just went out on a connection that waits for its next request: now it idles.
            if (replies_.empty() && !closing_ && !idle_armed_) arm_idle_timer();
            return;
        }
        if (!closing_ && replies_.size() >= limits().max_pipelined) return watch_for_hangup();
        if (!closing_ && buffer_.size() > 0) return begin_request();
        waiting_ = true;
        if (replies_.empty() && !closing_) arm_idle_timer();  // a long answer keeps its client
        socket_.async_wait(tcp::socket::wait_read, [self = shared_from_this()](error_code error) {
            self->waiting_ = self->idle_armed_ = false;
            self->read_timer_.cancel();
            if (self->closed_) return;
            switch (error ? ClientInput::Closed : self->peek_client()) {
            case ClientInput::Closed: return self->shut();  // its requests in flight are dropped
            case ClientInput::None: return self->wait_for_request();
            case ClientInput::Bytes: if (!self->closing_) self->begin_request(); return;
            }
        });
    }

    // What a socket reported readable holds. The reactor may report it readable again from readiness a
    // completed read left behind, with nothing to read and the client still there: only a peek tells
    // that from the client's FIN (or reset).
    enum class ClientInput { Bytes, None, Closed };
    ClientInput peek_client() {
        char byte;
        error_code error;
        const size_t peeked = socket_.receive(asio::buffer(&byte, 1), tcp::socket::message_peek, error);
        if (error == asio::error::would_block) return ClientInput::None;
        return error || peeked == 0 ? ClientInput::Closed : ClientInput::Bytes;
    }

    // With the pipeline full nothing is read (the client's further requests wait in the socket, or
    // its writes block), so a read cannot tell that the client left: asked of the socket every
    // 100 ms instead, until an answer makes room. A FIN counts even behind unread bytes.
    void watch_for_hangup() {
        if (watching_hangup_) return;
        watching_hangup_ = true;
        hangup_timer_.expires_after(std::chrono::milliseconds(100));
        hangup_timer_.async_wait([self = shared_from_this()](error_code error) {
            self->watching_hangup_ = false;
            if (error || self->closed_) return;
            pollfd descriptor{.fd = self->socket_.native_handle(), .events = POLLRDHUP};
            if (::poll(&descriptor, 1, 0) > 0 && (descriptor.revents & (POLLRDHUP | POLLHUP | POLLERR)))
                return self->shut();  // every request it started is told its client is gone
            self->wait_for_request();
        });
    }

    void arm_idle_timer() {
        idle_armed_ = true;
        arm(read_timer_, limits().idle_timeout);
    }

    void begin_request() {
        in_request_ = true;
        body_lease_ = BodyLease(server_->body_budget);
        deadline_hit_ = false;
        parser_.emplace();
        parser_->header_limit(uint32_t(limits().max_header_bytes));
        parser_->body_limit(limits().max_body_bytes);
        read_timer_.expires_after(limits().request_deadline);
        read_timer_.async_wait([self = shared_from_this()](error_code error) {
            if (error || self->closed_ || !expired(self->read_timer_)) return;
            self->deadline_hit_ = true;
            error_code ignored;
            self->socket_.cancel(ignored);
        });
        beast::http::async_read_header(socket_, buffer_, *parser_, [self = shared_from_this()](error_code error, size_t) {
            self->on_header(error);
        });
    }

    void on_header(error_code error) {
        if (error) return request_failed(error);
        const auto& message = parser_->get();
        if (size_t(std::distance(message.begin(), message.end())) > limits().max_header_fields)
            return refuse(431, fmt::format("a request may have at most {} header fields", limits().max_header_fields));
        if (parser_->content_length() && *parser_->content_length() > limits().max_body_bytes)
            return refuse(413, fmt::format("the request body is larger than the {} MiB the server accepts",
                                           limits().max_body_bytes >> 20));
        if (parser_->is_done()) return dispatch();
        if (!reserve_body()) return;
        // A body follows. The header's ACK goes now: a client that wrote header and body apart holds
        // the body (Nagle) until that ACK, which Linux would otherwise delay by up to 40 ms.
        const int quick_ack = 1;
        ::setsockopt(socket_.native_handle(), IPPROTO_TCP, TCP_QUICKACK, &quick_ack, sizeof quick_ack);
        const beast::string_view expect = message[beast::http::field::expect];
        if (iequals(std::string_view(expect.data(), expect.size()), "100-continue") && replies_.empty() && buffer_.size() == 0) {
            static const std::string continue_line = "HTTP/1.1 100 Continue\r\n\r\n";
            asio::async_write(socket_, asio::buffer(continue_line), [self = shared_from_this()](error_code error, size_t) {
                if (error) return self->shut();
                self->read_body();
            });
            return;
        }
        read_body();
    }

    // The server's body budget holds what the header announces (Content-Length) before any of it is
    // read, or (chunked) what came so far and a step more. False, answered 503, when it lacks them.
    bool reserve_body() {
        constexpr uint64_t chunked_step = 1 << 20;
        const uint64_t needed = parser_->content_length().value_or(
            std::min(parser_->get().body().size() + chunked_step, limits().max_body_bytes));
        if (needed <= body_lease_.bytes() || body_lease_.resize(needed)) return true;
        refuse(503, fmt::format("the server holds {} MiB of request bodies, all it may; try again later",
                                limits().max_buffered_body_bytes >> 20));
        return false;
    }

    // Reads the body a piece at a time, each within the budget.
    void read_body() {
        if (!reserve_body()) return;
        beast::http::async_read_some(socket_, buffer_, *parser_, [self = shared_from_this()](error_code error, size_t) {
            if (error) return self->request_failed(error);
            if (self->parser_->is_done()) return self->dispatch();
            self->read_body();
        });
    }

    void request_failed(error_code error) {
        if (closed_) return;
        if (deadline_hit_)
            return refuse(408, fmt::format("the request did not arrive within {} s", limits().request_deadline.count() / 1000));
        if (error == beast::http::error::header_limit)
            return refuse(431, fmt::format("the request line and headers exceed {} KiB", limits().max_header_bytes >> 10));
        if (error == beast::http::error::body_limit)
            return refuse(413, fmt::format("the request body is larger than the {} MiB the server accepts",
                                           limits().max_body_bytes >> 20));
        // The client closed or reset the connection, before or within a request: nobody to answer.
        if (error == beast::http::error::end_of_stream || error == beast::http::error::partial_message ||
            error == asio::error::eof || error == asio::error::connection_reset || error == asio::error::operation_aborted ||
            error == asio::error::broken_pipe)
            return shut();
        refuse(400, fmt::format("the request is not valid HTTP/1.1 ({})", error.message()));
    }

    Reply& add_reply(bool http_1_0, bool keep_alive) {
        read_timer_.cancel();
        in_request_ = false;
        auto reply = std::shared_ptr<Reply>(new Reply(weak_from_this(), server_->policy, http_1_0, keep_alive));
        replies_.push_back(reply);
        {
            std::lock_guard lock(server_->mutex);
            server_->open_replies += 1;
        }
        return *reply;
    }

    // Answers a request that cannot be read or taken, then closes: what follows it in the stream
    // cannot be trusted to start at a request's first byte.
    void refuse(int status, std::string_view message) {
        closing_ = true;
        body_lease_ = BodyLease();
        add_reply(false, false).send(status, "application/json", server_->error_body(status, message));
    }

    void dispatch() {
        beast::http::request<beast::http::string_body> message = parser_->release();
        parser_.reset();
        const bool keep_alive = message.keep_alive() && !closing_ && server_->accepting.load();
        if (!keep_alive) closing_ = true;
        Request request;
        request.method = std::string(message.method_string());
        const std::string_view target(message.target().data(), message.target().size());
        const size_t question = target.find('?');
        request.path = std::string(target.substr(0, question));
        if (question != std::string_view::npos) request.query = std::string(target.substr(question + 1));
        for (const auto& field : message) request.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
        request.body = std::move(message.body());
        request.body_lease = std::move(body_lease_);
        Reply& reply = add_reply(message.version() == 10, keep_alive);
        if (!server_->accepting.load()) {
            reply.send(503, "application/json", server_->error_body(503, "the server is shutting down"));
        } else {
            try {
                server_->handler(std::move(request), replies_.back());
            } catch (const std::exception& error) {  // the handler's own errors are its replies; this is a bug's
                reply.send(500, "application/json", server_->error_body(500, error.what()));
                reply.end();
            }
        }
        wait_for_request();
    }

    // Hands the first reply's bytes to the socket; replies leave in the order of their requests.
    void flush() {
        if (writing_ || closed_) return;
        while (!replies_.empty()) {
            Reply& head = *replies_.front();
            bool ended = false, keep_alive = true;
            {
                std::lock_guard lock(head.mutex_);
                out_ = std::move(head.pending_);
                head.pending_.clear();
                ended = head.ended_;
                keep_alive = head.keep_alive_;
            }
            if (!out_.empty()) return write_out();
            if (!ended) break;
            replies_.pop_front();
            server_->reply_closed();
            if (!keep_alive || (closing_ && replies_.empty())) return linger_close();
        }
        wait_for_request();  // a reply out may make room in the pipeline
    }

    void write_out() {
        writing_ = true;
        arm(write_timer_, limits().write_stall);
        asio::async_write(socket_, asio::buffer(out_), [self = shared_from_this()](error_code error, size_t) {
            self->writing_ = false;
            self->write_timer_.cancel();
            self->out_.clear();
            if (error) return self->shut();
            self->flush();
        });
    }

    // A timer's handler may run after the timer was re-armed (it expired as it was cancelled): only
    // a timer whose current expiry has passed counts.
    static bool expired(const asio::steady_timer& timer) { return timer.expiry() <= asio::steady_timer::clock_type::now(); }

    // Expiry cancels whatever waits on the socket: the client took too long.
    void arm(asio::steady_timer& timer, std::chrono::milliseconds after) {
        timer.expires_after(after);
        timer.async_wait([self = shared_from_this(), &timer](error_code error) {
            if (error || self->closed_ || !expired(timer)) return;
            error_code ignored;
            self->socket_.cancel(ignored);
        });
    }

    // Closes after the last answer: sends FIN, then reads (and drops) what the client still sends
    // for a moment, so an unread request body does not turn the answer into a reset.
    void linger_close() {
        if (closed_) return;
        closed_ = true;
        mark_replies_gone();
        error_code ignored;
        socket_.shutdown(tcp::socket::shutdown_send, ignored);
        read_timer_.expires_after(std::chrono::seconds(2));
        read_timer_.async_wait([self = shared_from_this()](error_code) {
            error_code ignored;
            self->socket_.close(ignored);
        });
        drain_input();
    }

    void drain_input() {
        socket_.async_read_some(asio::buffer(scratch_), [self = shared_from_this()](error_code error, size_t) {
            if (!error) return self->drain_input();
            self->read_timer_.cancel();
            error_code ignored;
            self->socket_.close(ignored);
        });
    }

    // Idempotent: also ends a lingering close at once.
    void shut() {
        closed_ = true;
        mark_replies_gone();
        read_timer_.cancel();
        write_timer_.cancel();
        hangup_timer_.cancel();
        body_lease_ = BodyLease();
        error_code ignored;
        socket_.shutdown(tcp::socket::shutdown_both, ignored);
        socket_.close(ignored);
    }

    void mark_replies_gone() {
        for (const auto& reply : replies_) {
            reply->gone_ = true;
            server_->reply_closed();
        }
        replies_.clear();
    }

    std::shared_ptr<Server::State> server_;
    tcp::socket socket_;
    asio::steady_timer read_timer_, write_timer_, hangup_timer_;
    beast::flat_buffer buffer_;
    std::optional<beast::http::request_parser<beast::http::string_body>> parser_;
    BodyLease body_lease_;  // the body being read
    std::deque<std::shared_ptr<Reply>> replies_;  // in request order; the first is being written
    std::string out_;                             // the bytes of the write in flight
    std::array<char, 4096> scratch_;
    bool waiting_ = false;     // a wait for the client's next bytes is pending
    bool idle_armed_ = false;  // and the idle timeout runs for it
    bool watching_hangup_ = false;
    bool in_request_ = false;  // reading a request's header or body
    bool deadline_hit_ = false;
    bool writing_ = false;
    bool closing_ = false;  // read no more requests; close once the replies are out
    bool closed_ = false;
};

// ---- Reply ----

std::string Reply::head(int status, std::string_view content_type, const Headers& headers, std::string_view length_header) const {
    std::string text = fmt::format("HTTP/1.1 {} {}\r\n", status, reason_phrase(status));
    if (!content_type.empty()) text += fmt::format("Content-Type: {}\r\n", content_type);
    text += length_header;
    if (!keep_alive_) text += "Connection: close\r\n";
    else if (http_1_0_) text += "Connection: keep-alive\r\n";
    for (const auto& [name, value] : policy_->response_headers) text += fmt::format("{}: {}\r\n", name, value);
    for (const auto& [name, value] : headers) text += fmt::format("{}: {}\r\n", name, value);
    text += "\r\n";
    return text;
}

void Reply::send(int status, std::string_view content_type, std::string body, const Headers& headers) {
    {
        std::lock_guard lock(mutex_);
        if (begun_) return;
        begun_ = ended_ = true;
        pending_ = head(status, content_type, headers, fmt::format("Content-Length: {}\r\n", body.size()));
        pending_ += body;
    }
    wake();
}

void Reply::begin_stream(int status, std::string_view content_type, const Headers& headers) {
    {
        std::lock_guard lock(mutex_);
        if (begun_) return;
        begun_ = streaming_ = true;
        // Without chunked encoding (HTTP/1.0) the end of the body is the end of the connection.
        if (http_1_0_) keep_alive_ = false;
        pending_ = head(status, content_type, headers, http_1_0_ ? "" : "Transfer-Encoding: chunked\r\n");
    }
    wake();
}

void Reply::write(std::string_view data) {
    if (data.empty()) return;
    {
        std::lock_guard lock(mutex_);
        if (!streaming_ || ended_ || gone_) return;
        if (pending_.size() + data.size() > policy_->max_pending_bytes) {
            gone_ = true;  // the client reads nothing: its connection is closed below
            pending_.clear();
        } else if (http_1_0_) {
            pending_ += data;
        } else {
            pending_ += fmt::format("{:x}\r\n", data.size());
            pending_ += data;
            pending_ += "\r\n";
        }
    }
    if (gone_) {
        if (auto connection = connection_.lock()) connection->close_now();
        return;
    }
    wake();
}

void Reply::end() {
    {
        std::lock_guard lock(mutex_);
        if (!streaming_ || ended_) return;
        ended_ = true;
        if (!http_1_0_) pending_ += "0\r\n\r\n";
    }
    wake();
}

void Reply::wake() {
    if (auto connection = connection_.lock()) connection->wake();
}

// ---- Server ----

Server::Server(ServerOptions options, Handler handler) : state_(std::make_shared<State>()) {
    state_->policy = std::make_shared<const ReplyPolicy>(
        ReplyPolicy{options.response_headers, options.limits.max_pending_bytes});
    state_->body_budget = std::make_shared<BodyBudget>(options.limits.max_buffered_body_bytes);
    state_->options = std::move(options);
    state_->handler = std::move(handler);
}

Server::~Server() { stop(); }

namespace {

void accept_next(const std::shared_ptr<Server::State>& state);

}  // namespace

int Server::listen(const std::string& host, int port) {
    State& state = *state_;
    error_code error;
    const asio::ip::address address = asio::ip::make_address(host, error);
    if (error) fail("cannot listen on {}: it is not an IP address", host);
    tcp::acceptor& acceptor = state.acceptor.emplace(state.io);
    const tcp::endpoint endpoint(address, uint16_t(port));
    acceptor.open(endpoint.protocol(), error);
    if (!error) acceptor.set_option(asio::socket_base::reuse_address(true), error);
    if (!error) acceptor.bind(endpoint, error);
    if (!error) acceptor.listen(asio::socket_base::max_listen_connections, error);
    if (error) fail("cannot listen on {}:{}: {}", host, port, error.message());
    accept_next(state_);
    for (unsigned i = 0; i < std::max(1u, state.options.io_threads); ++i) state.threads.emplace_back([&state] { state.io.run(); });
    return acceptor.local_endpoint().port();
}

namespace {

void accept_next(const std::shared_ptr<Server::State>& state) {
    state->acceptor->async_accept(asio::make_strand(state->io), [state](error_code error, tcp::socket socket) {
        if (error == asio::error::operation_aborted || !state->accepting.load()) return;
        if (!error) {
            if (state->open_connections.load() >= state->options.limits.max_connections) {
                // Best effort, without waiting on a client that may not read.
                const std::string body = state->error_body(503, "the server has too many open connections; try again later");
                const std::string reply = fmt::format(
                    "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: {}\r\n"
                    "Connection: close\r\n\r\n{}", body.size(), body);
                error_code ignored;
                socket.non_blocking(true, ignored);
                socket.write_some(asio::buffer(reply), ignored);
                socket.close(ignored);
            } else {
                auto connection = std::make_shared<Connection>(state, std::move(socket));
                {
                    std::lock_guard lock(state->mutex);
                    std::erase_if(state->connections, [](const std::weak_ptr<Connection>& c) { return c.expired(); });
                    state->connections.push_back(connection);
                }
                asio::dispatch(connection->executor(), [connection] { connection->start(); });
            }
        }
        accept_next(state);
    });
}

std::vector<std::shared_ptr<Connection>> open_connections(Server::State& state) {
    std::lock_guard lock(state.mutex);
    std::vector<std::shared_ptr<Connection>> open;
    for (const auto& weak : state.connections)
        if (auto connection = weak.lock()) open.push_back(std::move(connection));
    return open;
}

}  // namespace

void Server::stop_accepting() {
    if (!state_->accepting.exchange(false)) return;
    asio::post(state_->io, [state = state_] {
        error_code ignored;
        if (state->acceptor) state->acceptor->close(ignored);
    });
    for (const auto& connection : open_connections(*state_)) connection->close_when_done();
}

bool Server::drain(std::chrono::milliseconds timeout) {
    std::unique_lock lock(state_->mutex);
    return state_->replies_done.wait_for(lock, timeout, [&] { return state_->open_replies == 0; });
}

void Server::stop() {
    State& state = *state_;
    if (state.threads.empty()) return;
    stop_accepting();
    for (const auto& connection : open_connections(state)) connection->close_now();
    // With every socket and timer closed the I/O threads run out of work and return; running the
    // aborted handlers (rather than dropping them) frees the connections they hold.
    state.work.reset();
    for (std::thread& thread : state.threads) thread.join();
    state.threads.clear();
}

size_t Server::connections() const { return state_->open_connections.load(); }

}  // namespace vkllm::server::http
