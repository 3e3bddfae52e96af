// One HTTP/1.1 connection: read with timeouts and size limits, answer,
// keep alive, close gracefully (Beast advanced_server_flex). HttpSession
// holds the request loop once for both transports; PlainSession runs it over
// TCP, TlsSession over TLS after the handshake. The transport is a template
// parameter, so plain HTTP pays nothing for TLS support.
//
// A session reads each request's head and hands it to the router
// (ServeRequest) in an Exchange (exchange.h) of the session's own, which
// carries the router's requests back: read the body, take the answer, or
// where to send an answer computed later. The router prepares a request (authentication included)
// from the head alone: where the request runs is the route table's business (routes.h), not the
// session's. Only an admitted request whose operation reads a body gets its body read, once the
// body's length is taken from the server-wide budget (body_budget.h). A request answered without
// its body (refused, or an operation that reads none) has the body dropped as it arrives, which
// costs no memory, and keeps its connection; one whose client waits for
// 100 Continue gets its answer instead, and the connection is closed.
// Where the pieces are: session.cc holds the request loop (read the head,
// hand it to the router, write the answer, keep alive); session_body.cc
// reads an admitted body (100 Continue, the minimum rate) or drops an
// unread one; session_body_budget.cc takes its room from the body budget;
// session_drain.cc refuses an oversized request and drains it before
// closing; session_transports.cc holds PlainSession and TlsSession.
// Thread-safety: a session runs on one I/O thread's io_context, which that
// thread alone runs (Listener).
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <string>

#include "server/http/connection_registry.h"
#include "server/http/exchange.h"
#include "server/http/request_parser.h"
#include "server/http/router.h"
#include "server/http/scheduler.h"
#include "server/http/session_group.h"
#include "server/protocol/request.h"
#include "server/runtime/response_budget.h"

namespace cerulean::server {

// A connection's executor, socket and stream, with the concrete executor
// type: with any_io_executor every copy of an executor (many per request in
// Asio's and Beast's composed operations) is a heap allocation, many per
// request. The executor is its io_context's own: one thread runs that
// io_context, so a strand would only add its locking and queueing.
using ConnectionExecutor = boost::asio::io_context::executor_type;
using ConnectionSocket = boost::asio::basic_stream_socket<boost::asio::ip::tcp, ConnectionExecutor>;
using ConnectionStream = boost::beast::basic_stream<boost::asio::ip::tcp, ConnectionExecutor>;

// The request loop shared by both transports. Derived provides stream()
// (an AsyncStream whose executor is the connection's), DoClose() and
// derives from std::enable_shared_from_this<Derived>.
template <class Derived>
class HttpSession : public Connection, private RequestLineObserver {
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
  // The session's side of the request being served: the router's requests
  // to the session, carried out on its I/O thread.
  class SessionExchange final : public Exchange {
   public:
    SessionExchange(HttpSession& session, HttpRequest& http, const Arrival& arrival)
        : Exchange(http, arrival), session_(session) {}
    void NeedBody(size_t limit) override { session_.ReadBody(limit); }
    void Answer(HttpResponse res) override { session_.Respond(std::move(res)); }
    Continuation AnswerLater() override;

   private:
    HttpSession& session_;
  };

  // The request's head is in: the router prepares it.
  void OnHeader(boost::beast::error_code ec, std::size_t bytes);
  // Reads the body, taking room for it from the budget as it arrives
  // (body_budget.h), at most `limit` bytes (0: no limit of its own).
  void ReadBody(size_t limit);
  // Answers a body longer than its request's limit (Exchange::NeedBody).
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
  void OnRequestLine() override;
  // Bytes still to drop before closing after answering a request whose
  // body was not read (none if its client waits for 100 Continue and has
  // sent nothing); the buffered ones are dropped now.
  std::uint64_t DrainUnreadBody(std::optional<std::uint64_t> length);
  std::shared_ptr<Connection> Share() override;
  void Evict() override;
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
  // Drains (DoDrain) under one deadline for the whole drain, so that a
  // client that trickles cannot keep the connection.
  void StartDrain();
  // Reads and drops up to drain_left_ bytes (until EOF), then closes.
  void DoDrain();
  void OnDrain(boost::beast::error_code ec, std::size_t bytes);

  // The request being read and answered: its message lives in the parser
  // until the next request begins.
  std::optional<RequestParser> parser_;
  // The request between the session and the router, from its head to its
  // answer (replaced by the next request's).
  std::optional<SessionExchange> exchange_;
  bool body_unread_ = false;    // the head announced a body not read (yet)
  bool discard_body_ = false;   // after this answer, drop the body and keep alive
  bool continue_sent_ = false;  // 100 Continue was sent for this request
  size_t body_reserved_ = 0;    // taken from ctx_.body_budget for this body
  size_t body_limit_ = 0;       // the most this body may hold
  bool body_capped_ = false;    // body_limit_ is the request's own (NeedBody's limit)
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

template <class Derived>
template <class F>
void HttpSession<Derived>::Guard(const char* what, F&& f) noexcept {
  try {
    f();
    return;
  } catch (const std::exception& e) {
    try {
      group_->failure_log().Log("connection from " + peer_ + ": " + what + ": " + e.what() +
                                "; connection closed");
    } catch (...) {
    }
  } catch (...) {
    try {
      group_->failure_log().Log("connection from " + peer_ + ": " + what + ": unknown exception");
    } catch (...) {
    }
  }
  CloseNow();
}

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
