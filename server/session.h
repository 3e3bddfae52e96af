// One HTTP/1.1 connection: read with timeouts and size limits, answer,
// keep alive, close gracefully (Beast advanced_server_flex). HttpSession
// holds the request loop once for both transports; PlainSession runs it over
// TCP, TlsSession over TLS after the handshake. The transport is a template
// parameter, so plain HTTP pays nothing for TLS support.
// Thread-safety: a session runs on one I/O thread's io_context, which that
// thread alone runs (Listener).
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "server/request.h"

namespace cerulean::server {

// Largest request body accepted (batches included); larger ones get 413.
inline constexpr size_t kMaxBodyBytes = 4 * 1024 * 1024;

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
class HttpSession {
 protected:
  HttpSession(const ServerContext& ctx, std::string peer) : ctx_(ctx), peer_(std::move(peer)) {}

  void DoRead();
  void Fail(boost::beast::error_code ec, const char* what);

  const ServerContext& ctx_;
  boost::beast::flat_buffer buffer_;

 private:
  Derived& derived() { return static_cast<Derived&>(*this); }
  void OnRead(boost::beast::error_code ec, std::size_t bytes);
  // Sends the answer to request_ (on the session's I/O thread).
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

  std::optional<http::request_parser<RequestBody>> parser_;
  HttpRequest request_;  // the request being answered
  std::string wire_;     // the response's bytes while they are written
  // A connection keeps a wire buffer up to this size between requests.
  static constexpr size_t kKeepWireBytes = 64 * 1024;
  HttpResponse response_;
  std::string peer_;
  std::uint64_t drain_left_ = 0;  // bytes still to drop before closing
  // The read buffer's capacity (DoRead): the larger one after a request
  // whose body did not fit the smaller; a buffer never shrinks, so a
  // connection holds at most the larger.
  static constexpr size_t kReadBufferBytes = 8 * 1024;
  static constexpr size_t kLargeReadBufferBytes = 64 * 1024;
  bool large_bodies_ = false;
};

// Plain HTTP over TCP.
class PlainSession : public HttpSession<PlainSession>,
                     public std::enable_shared_from_this<PlainSession> {
 public:
  PlainSession(ConnectionSocket&& socket, const ServerContext& ctx);
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
  TlsSession(ConnectionSocket&& socket, boost::asio::ssl::context& tls, const ServerContext& ctx);
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
