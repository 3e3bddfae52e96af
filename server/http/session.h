// One HTTP/1.1 connection: read with timeouts and size limits, answer,
// keep alive, close gracefully (Beast advanced_server_flex). HttpSession
// holds the request loop once for both transports; PlainSession runs it over
// TCP, TlsSession over TLS after the handshake. The transport is a template
// parameter, so plain HTTP pays nothing for TLS support.
//
// A session reads each request's head and hands it to the router
// (ServeRequest), which prepares it (authentication included) from the head
// alone: where the request runs is the route table's business (routes.h),
// not the session's. Only an admitted request whose operation reads a body
// gets its body read, once the body's length is taken from the server-wide
// budget (body_budget.h). A request answered without its body (refused, or
// an operation that reads none) has the body dropped as it arrives, which
// costs no memory, and keeps its connection; one whose client waits for
// 100 Continue gets its answer instead, and the connection is closed.
// Thread-safety: a session runs on one I/O thread's io_context, which that
// thread alone runs (Listener).
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "server/http/request_parser.h"
#include "server/http/router.h"
#include "server/http/scheduler.h"
#include "server/protocol/request.h"
#include "server/protocol/response_budget.h"

namespace cerulean::server {

// Limits on a listener's connections (Listener, SessionGroup).
struct ConnectionLimits {
  // Open connections; at the cap, a new connection replaces the one that
  // has waited longest for its next request, or is closed if none waits.
  size_t max_connections = 1000;
  // Time a connection has to begin its next request (send its request line,
  // or its whole header if the first bytes do not hold the request line),
  // after connecting or after its previous response (idle keep-alive).
  std::chrono::seconds keep_alive_timeout{60};
  // Time it then has to send the rest of that request (headers and body):
  // slow senders (slowloris) are closed when it runs out. A body waiting
  // for the body budget waits at most this long, then gets 503 ServerBusy.
  std::chrono::seconds request_timeout{60};
};

// Writes at most one line per interval to stderr and says how many it
// dropped meanwhile, so that a flood of failures cannot flood the log.
// Thread-safety: Log may be called from any thread.
class ThrottledLog {
 public:
  explicit ThrottledLog(std::chrono::steady_clock::duration interval) : interval_(interval) {}
  void Log(const std::string& line);

 private:
  const std::chrono::steady_clock::duration interval_;
  std::mutex mu_;
  std::chrono::steady_clock::time_point next_{};  // guarded by mu_
  size_t dropped_ = 0;                            // guarded by mu_
};

class Connection;

// The open connections of one listener, so that it can enforce
// ConnectionLimits::max_connections.
// Thread-safety: every member may be called from any thread.
class ConnectionRegistry {
 public:
  ConnectionRegistry() = default;
  ConnectionRegistry(const ConnectionRegistry&) = delete;
  ConnectionRegistry& operator=(const ConnectionRegistry&) = delete;

  // Open connections.
  size_t Count() const { return count_.load(std::memory_order_relaxed); }
  // Closes the connection that has waited longest for its next request (or
  // the rest of one), or for its client to read its answer: a connection
  // whose answer has been written for kStalledWriteMs without being taken
  // counts as waiting, from when the write began. False iff no connection
  // is waiting.
  bool EvictLongestWaiting();
  static constexpr std::int64_t kStalledWriteMs = 1000;

 private:
  friend class Connection;
  void Add(Connection* c);
  void Remove(Connection* c);

  std::mutex mu_;
  std::vector<Connection*> connections_;  // guarded by mu_; index_ is the position
  std::atomic<size_t> count_{0};
};

// What a listener's sessions share: its limits, its registry of open
// connections, the log of failures that close a connection, the requests
// they are answering (for the drain on shutdown, and the load each request
// is told about: Request::in_flight) and whether they were asked to close.
// Each listener has its own, so two servers in one process share nothing.
// Thread-safety: every member may be used from any thread.
class SessionGroup {
 public:
  explicit SessionGroup(const ConnectionLimits& limits = {}) : limits_(limits) {}
  SessionGroup(const SessionGroup&) = delete;
  SessionGroup& operator=(const SessionGroup&) = delete;

  const ConnectionLimits& limits() const { return limits_; }
  ConnectionRegistry& connections() { return connections_; }
  // Failures that end a connection abnormally (exceptions), at most one
  // line a second.
  ThrottledLog& failure_log() { return failure_log_; }
  // Requests read but not yet fully answered.
  int InFlight() const { return in_flight_.load(std::memory_order_relaxed); }
  // Ends every open keep-alive connection once its in-flight request is
  // done.
  void RequestClose() { closing_.store(true, std::memory_order_relaxed); }
  bool closing() const { return closing_.load(std::memory_order_relaxed); }
  // A request begins (returns the count with it) or ends.
  int Begin() { return in_flight_.fetch_add(1, std::memory_order_relaxed) + 1; }
  void End() { in_flight_.fetch_sub(1, std::memory_order_relaxed); }

 private:
  const ConnectionLimits limits_;
  ConnectionRegistry connections_;
  ThrottledLog failure_log_{std::chrono::seconds(1)};
  std::atomic<int> in_flight_{0};
  std::atomic<bool> closing_{false};
};

// An open connection, counted and registered in its registry from
// construction to destruction.
// Thread-safety: the registry calls Share() and Evict() and reads the
// waiting and writing times from any thread; the rest belongs to the
// connection's I/O thread.
class Connection {
 public:
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

 protected:
  // Registers the connection in `registry`, which the connection keeps
  // alive until it is destroyed.
  explicit Connection(std::shared_ptr<ConnectionRegistry> registry);
  virtual ~Connection();
  // Waiting for a request (since now), or answering one. Cheap: a clock
  // read of the coarse clock and a relaxed store.
  void SetWaiting(bool waiting);
  // When SetWaiting(true) was last called (coarse ms; kEvicted, 0 too).
  std::int64_t waiting_since_ms() const {
    return waiting_since_ms_.load(std::memory_order_relaxed);
  }
  // Writing an answer (since now), or done writing it.
  void SetWriting(bool writing);
  // True iff chosen for eviction while waiting (or writing), and still
  // waiting (writing).
  bool evicted() const {
    return waiting_since_ms_.load(std::memory_order_relaxed) == kEvicted ||
           writing_since_ms_.load(std::memory_order_relaxed) == kEvicted;
  }

 private:
  friend class ConnectionRegistry;
  // A strong reference, or null if the connection is being destroyed.
  virtual std::shared_ptr<Connection> Share() = 0;
  // Closes the connection on its own I/O thread iff it still waits then.
  virtual void Evict() = 0;

  static constexpr std::int64_t kEvicted = -1;
  const std::shared_ptr<ConnectionRegistry> registry_;
  std::atomic<std::int64_t> waiting_since_ms_{0};  // 0: not waiting; kEvicted
  std::atomic<std::int64_t> writing_since_ms_{0};  // 0: not writing; kEvicted
  size_t index_ = 0;                               // in registry_, guarded by its mutex
};

// A connection's executor, socket and stream, with the concrete executor
// type: with any_io_executor every copy of an executor (many per request in
// Asio's and Beast's composed operations) is a heap allocation (profiled:
// ~20 of a point read's ~42). The executor is its io_context's own: one
// thread runs that io_context, so a strand would only add its locking and
// queueing (a strand per connection was ~3 % of a point read's server CPU,
// `PROFILER=none scripts/profile.sh point 8 16`).
using ConnectionExecutor = boost::asio::io_context::executor_type;
using ConnectionSocket = boost::asio::basic_stream_socket<boost::asio::ip::tcp, ConnectionExecutor>;
using ConnectionStream = boost::beast::basic_stream<boost::asio::ip::tcp, ConnectionExecutor>;

// The request loop shared by both transports. Derived provides stream()
// (an AsyncStream whose executor is the connection's), DoClose() and
// derives from std::enable_shared_from_this<Derived>.
template <class Derived>
class HttpSession : public Connection {
 protected:
  HttpSession(const ServerContext& ctx, std::shared_ptr<SessionGroup> group, std::string peer)
      : Connection(std::shared_ptr<ConnectionRegistry>(group, &group->connections())),
        ctx_(ctx),
        group_(std::move(group)),
        peer_(std::move(peer)) {
    LimitReadBuffer(buffer_);
    if (ctx_.response_budget != nullptr) response_hold_.emplace(ctx_.response_budget);
  }
  ~HttpSession() override;

  void DoRead();
  void Fail(boost::beast::error_code ec, const char* what);
  // Gives back what the request's body holds (memory and budget).
  void ReleaseBody();
  // Runs the body of a completion handler: an exception it throws closes
  // this connection and is logged, and never reaches io_context::run().
  template <class F>
  void Guard(const char* what, F&& f) noexcept;

  const ServerContext& ctx_;
  const std::shared_ptr<SessionGroup> group_;
  boost::beast::flat_buffer buffer_;

 private:
  Derived& derived() { return static_cast<Derived&>(*this); }
  // The request's head is in: the router prepares it.
  void OnHeader(boost::beast::error_code ec, std::size_t bytes);
  // Carries out what the router decided (respond, wait, read the body).
  void Carry(Served&& served);
  // Reads the body, taking room for it from the budget as it arrives
  // (body_budget.h), at most `limit` bytes (0: no limit of its own).
  void ReadBody(size_t limit);
  // Answers a body longer than its request's limit (Served::body_limit).
  void RefuseCappedBody();
  // The room the body needs before the next read.
  size_t BodyNeed();
  // True iff the body holds BodyNeed() (or all of the budget).
  bool BodyHasRoom();
  // Takes BodyNeed() from the budget (waiting if it must), then goes on
  // reading (BodyReserved).
  void ReserveBody();
  void OnBudget(size_t taken);
  void OnBudgetTimeout();
  void BodyReserved();
  // Reads more of the body, within its room and its minimum rate.
  void ContinueBody();
  // Answers `Expect: 100-continue` if the client waits for it, then reads
  // the body.
  void StartBody();
  void OnContinue(boost::beast::error_code ec, std::size_t bytes);
  // Parses what the buffer holds, then reads the rest of the body.
  void ReadBodyBytes();
  void OnBody(boost::beast::error_code ec, std::size_t bytes);
  // The body is in (or failed to arrive): the router goes on with the request.
  void BodyRead(boost::beast::error_code ec);
  // After answering a request whose body was not read: reads the body and
  // drops it, then the next request.
  void DiscardBody();
  void OnDiscarded(boost::beast::error_code ec, std::size_t bytes);
  // Called by the parser at the request line: the request timeout starts.
  static void OnRequestLine(void* self);
  // Bytes still to drop before closing after answering a request whose
  // body was not read (none if its client waits for 100 Continue and has
  // sent nothing); the buffered ones are dropped now.
  std::uint64_t DrainUnreadBody(std::optional<std::uint64_t> length);
  std::shared_ptr<Connection> Share() override;
  void Evict() override;
  // Where an answer computed later goes (ServeRequest's `defer`).
  static Continuation Defer(void* self);
  // group_ counts this connection's request from Begin to End; Begin
  // returns the requests then in flight (this one included).
  int BeginRequest();
  void EndRequest();
  // Closes the socket at once (after an exception or an eviction).
  void CloseNow() noexcept;
  // Sends the answer to the request (on the session's I/O thread).
  void Respond(HttpResponse res);
  void DoWrite(HttpResponse res, bool close);
  // Resets the connection without answering (an injected fault).
  void DropConnection();
  void OnWrite(bool close, boost::beast::error_code ec, std::size_t bytes);
  // Answers 413 RequestBodyTooLarge for an oversized body, then drains it
  // and closes.
  void RejectTooLarge();
  // Answers 414/431 when the request line or headers exceed the limit, then
  // drains and closes.
  void RejectHeaderTooLarge();
  // Reads and drops up to drain_left_ bytes (until EOF), then closes.
  void DoDrain();
  void OnDrain(boost::beast::error_code ec, std::size_t bytes);

  // The request being read and answered: its message lives in the parser
  // until the next request begins.
  std::optional<RequestParser> parser_;
  HeldRequest held_;            // prepared from its head, while its body is read
  bool body_unread_ = false;    // the head announced a body not read (yet)
  bool discard_body_ = false;   // after this answer, drop the body and keep alive
  bool continue_sent_ = false;  // 100 Continue was sent for this request
  size_t body_reserved_ = 0;    // taken from ctx_.body_budget for this body
  size_t body_limit_ = 0;       // the most this body may hold
  bool body_capped_ = false;    // body_limit_ is the request's own (Served::body_limit)
  bool body_begun_ = false;     // room was taken and the body is being read
  // The minimum rate's start: when the body began, moved on by the time it
  // waited for the budget.
  std::chrono::steady_clock::time_point body_clock_;
  std::chrono::steady_clock::time_point budget_wait_started_;
  bool body_deadline_ = false;       // the stream's deadline is the body's minimum rate
  std::uint64_t budget_ticket_ = 0;  // waiting for the budget (BodyBudget::Enqueue)
  std::optional<boost::asio::steady_timer> budget_timer_;
  std::string wire_;  // the response's bytes while they are written
  // A connection keeps a wire buffer up to this size between requests.
  static constexpr size_t kKeepWireBytes = 64 * 1024;
  HttpResponse response_;
  // What the answer holds from ctx_.response_budget (set iff there is one).
  std::optional<ResponseHold> response_hold_;
  std::string peer_;
  std::uint64_t drain_left_ = 0;  // bytes still to drop before closing
  // The read buffer's capacity (DoRead): the larger one after a request
  // whose body did not fit the smaller; a buffer never shrinks, so a
  // connection holds at most the larger.
  static constexpr size_t kReadBufferBytes = 8 * 1024;
  static constexpr size_t kLargeReadBufferBytes = 64 * 1024;
  bool large_bodies_ = false;
  bool in_flight_ = false;  // counted in group_
};

// Plain HTTP over TCP.
class PlainSession : public HttpSession<PlainSession>,
                     public std::enable_shared_from_this<PlainSession> {
 public:
  PlainSession(ConnectionSocket&& socket, const ServerContext& ctx,
               std::shared_ptr<SessionGroup> group);
  void Run();

 private:
  friend class HttpSession<PlainSession>;
  ConnectionStream& stream() { return stream_; }
  void DoClose();

  ConnectionStream stream_;
};

// HTTPS: the TLS handshake, then the same request loop, then close_notify.
// REQUIRES: `tls` outlives the session.
class TlsSession : public HttpSession<TlsSession>, public std::enable_shared_from_this<TlsSession> {
 public:
  TlsSession(ConnectionSocket&& socket, boost::asio::ssl::context& tls, const ServerContext& ctx,
             std::shared_ptr<SessionGroup> group);
  void Run();

 private:
  friend class HttpSession<TlsSession>;
  boost::beast::ssl_stream<ConnectionStream>& stream() { return stream_; }
  void OnHandshake(boost::beast::error_code ec);
  void DoClose();
  void OnShutdown(boost::beast::error_code ec);

  boost::beast::ssl_stream<ConnectionStream> stream_;
};

}  // namespace cerulean::server
