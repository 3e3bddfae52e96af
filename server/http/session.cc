#include "server/http/session.h"

#include <array>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/ssl/error.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "server/devtools/faults.h"
#include "server/devtools/logger.h"
#include "server/http/response_serializer.h"
#include "server/runtime/body_budget.h"
#include "server/runtime/page_prefetch.h"

namespace cerulean::server {

namespace beast = boost::beast;
namespace net = boost::asio;
namespace ssl = boost::asio::ssl;

template <class Derived>
void HttpSession<Derived>::CloseNow() noexcept {
  beast::error_code ec;
  auto& socket = beast::get_lowest_layer(derived().stream()).socket();
  socket.shutdown(net::ip::tcp::socket::shutdown_both, ec);
  socket.close(ec);
}

template <class Derived>
std::shared_ptr<Connection> HttpSession<Derived>::Share() {
  return derived().weak_from_this().lock();
}

template <class Derived>
void HttpSession<Derived>::Evict() {
  auto self = derived().shared_from_this();
  net::post(derived().stream().get_executor(), [self] {
    // Still waiting: its read is cancelled by the close and the session ends.
    if (self->evicted()) self->CloseNow();
  });
}

template <class Derived>
int HttpSession<Derived>::BeginRequest() {
  if (in_flight_) return group_->InFlight();
  in_flight_ = true;
  return group_->Begin();
}

template <class Derived>
void HttpSession<Derived>::EndRequest() {
  if (in_flight_) {
    in_flight_ = false;
    group_->End();
  }
}

template <class Derived>
Continuation HttpSession<Derived>::SessionExchange::AnswerLater() {
  // The session stays alive through the completion's shared_ptr; no other
  // operation runs on it meanwhile. The response comes back to this
  // session's I/O thread to be written.
  auto session = session_.derived().shared_from_this();
  auto executor = session->stream().get_executor();
  return Continuation{executor, [session = std::move(session)](HttpResponse res) mutable {
                        auto ex = session->stream().get_executor();
                        net::dispatch(
                            ex, [session = std::move(session), res = std::move(res)]() mutable {
                              session->Guard("respond", [&] { session->Respond(std::move(res)); });
                            });
                      }};
}

template <class Derived>
HttpSession<Derived>::~HttpSession() {
  // Waiting for the budget: the grant, if it comes, finds no session and
  // gives the bytes back itself.
  if (budget_ticket_ != 0 && ctx_.body_budget != nullptr) ctx_.body_budget->Cancel(budget_ticket_);
  if (body_reserved_ > 0 && ctx_.body_budget != nullptr) {
    ctx_.body_budget->Release(body_reserved_);
  }
  EndRequest();
}

template <class Derived>
void HttpSession<Derived>::DoRead() {
  // Beast reads at most max(512, free capacity) bytes per call: a buffer
  // that only grew to the last request's size would take a second recvmsg
  // for most inserts. 8 KiB holds a typical request whole. A connection
  // that has sent a larger body (batches) reads 64 KiB at a time, Beast's
  // largest read, so that a batch takes few reads, each with its
  // epoll_wait and timer update.
  const size_t read_buffer_bytes = large_bodies_ ? kLargeReadBufferBytes : kReadBufferBytes;
  if (buffer_.capacity() < read_buffer_bytes) buffer_.reserve(read_buffer_bytes);
  parser_.emplace();
  body_unread_ = false;
  body_begun_ = false;
  continue_sent_ = false;
  parser_->OnRequestLine(this);
  SetWaiting(true);
  beast::get_lowest_layer(derived().stream()).expires_after(group_->limits().keep_alive_timeout);
  boost::beast::http::async_read_header(
      derived().stream(), buffer_, *parser_,
      beast::bind_front_handler(&HttpSession::OnHeader, derived().shared_from_this()));
}

template <class Derived>
void HttpSession<Derived>::OnRequestLine() {
  // Between two reads (the parser runs after a read completed), so the
  // stream's timer has no wait to cancel. The deadline moves from the
  // keep-alive one to the request's, unless the two are within a second of
  // each other: the common case of a request line that follows the read at
  // once costs a coarse clock read, not a timer update.
  const ConnectionLimits& limits = group_->limits();
  const std::int64_t now = CoarseNowMs();
  const std::int64_t keep_alive_deadline =
      waiting_since_ms() + std::chrono::milliseconds(limits.keep_alive_timeout).count();
  const std::int64_t request_deadline =
      now + std::chrono::milliseconds(limits.request_timeout).count();
  if (std::abs(request_deadline - keep_alive_deadline) > 1000) {
    beast::get_lowest_layer(derived().stream()).expires_after(limits.request_timeout);
  }
}

template <class Derived>
void HttpSession<Derived>::OnHeader(beast::error_code ec, std::size_t) {
  Guard("read", [&] {
    if (ec) {
      if (ec == boost::beast::http::error::end_of_stream) return derived().DoClose();
      if (ec == boost::beast::http::error::body_limit) return RejectTooLarge();
      if (ec == boost::beast::http::error::header_limit ||
          ec == RequestParseError::kFieldTooLarge) {
        return RejectHeaderTooLarge();
      }
      return Fail(ec, "read");
    }
    SetWaiting(false);
    const int in_flight = BeginRequest();
    if (ctx_.prefetcher != nullptr) ctx_.prefetcher->NoteRequest();
    body_unread_ = !parser_->is_done();
    // The router prepares the request from its head: it answers what runs
    // on this thread, asks for the body of an admitted request that reads
    // one, and answers the rest without blocking this thread (the response
    // then comes through SessionExchange::AnswerLater).
    exchange_.emplace(
        *this, parser_->get(),
        Arrival{peer_, in_flight, body_unread_, response_hold_ ? &*response_hold_ : nullptr});
    ServeRequest(ctx_, *exchange_);
  });
}

template <class Derived>
void HttpSession<Derived>::Respond(HttpResponse res) {
  if (body_reserved_ > 0) {
    ctx_.body_budget->Release(body_reserved_);
    body_reserved_ = 0;
  }
  if (IsConnectionDrop(res)) return DropConnection();
  // A large body is held until it is written: within the response budget,
  // or answered 503 ServerBusy instead (response_budget.h).
  if (response_hold_) {
    if (res.body().size() <= kUnbudgetedResponseBytes) {
      response_hold_->Clear();
    } else if (!response_hold_->SetTo(res.body().size())) {
      res = ServerBusyInstead(res);
    }
  }
  bool close = res.need_eof() || group_->closing();
  discard_body_ = false;
  if (body_unread_) {
    // A client waiting for 100 Continue may or may not send the body now:
    // the connection cannot be read on safely (RFC 9110 §10.1.1). Nor can
    // it once part of the body was parsed (refused while it was read).
    if (close || body_begun_ || (parser_->expects_continue() && !continue_sent_)) {
      close = true;
      std::optional<std::uint64_t> length;  // none for a chunked body
      if (auto l = parser_->content_length()) length = *l;
      drain_left_ = DrainUnreadBody(length);
    } else {
      discard_body_ = true;
    }
  }
  // The request's message goes now (the next request gets a new parser),
  // unless its body is still to be read and dropped.
  if (!discard_body_) parser_.reset();
  if (close) res.keep_alive(false);
  DoWrite(std::move(res), close);
}

template <class Derived>
void HttpSession<Derived>::DropConnection() {
  // An injected fault (faults.h): a reset, as when a connection is lost.
  EndRequest();
  beast::error_code ec;
  auto& socket = beast::get_lowest_layer(derived().stream()).socket();
  socket.set_option(net::socket_base::linger(true, 0), ec);
  socket.close(ec);
}

template <class Derived>
void HttpSession<Derived>::DoWrite(HttpResponse res, bool close) {
  response_ = std::move(res);
  SerializeResponse(response_, &wire_);
  // A body held from the response budget goes out at the minimum rate, or
  // the connection is closed and gives it back (response_budget.h).
  if (const size_t bytes = response_.body().size(); bytes > kUnbudgetedResponseBytes) {
    beast::get_lowest_layer(derived().stream())
        .expires_after(std::chrono::seconds(kSendGraceSeconds) +
                       std::chrono::milliseconds(bytes * 1000 / kMinSendBytesPerSecond));
  }
  // At the connection cap, one whose client does not take its answer can
  // be evicted (EvictLongestWaiting).
  SetWriting(true);
  std::array<net::const_buffer, 2> buffers{net::buffer(wire_), net::const_buffer()};
  if (response_.body().size() > kCopiedBodyBytes) buffers[1] = net::buffer(response_.body());
  net::async_write(
      derived().stream(), buffers,
      beast::bind_front_handler(&HttpSession::OnWrite, derived().shared_from_this(), close));
}

template <class Derived>
void HttpSession<Derived>::OnWrite(bool close, beast::error_code ec, std::size_t) {
  Guard("write", [&] {
    SetWriting(false);
    if (response_hold_) response_hold_->Clear();
    EndRequest();
    if (ctx_.prefetcher != nullptr) ctx_.prefetcher->Kick();
    if (ec) return Fail(ec, "write");
    if (close && drain_left_ > 0) return StartDrain();
    if (close) return derived().DoClose();
    // Its memory goes too: assigning an empty message would keep the body's
    // buffer (a short string is copied into it), held by an idle
    // connection outside the response budget.
    std::string().swap(response_.body());
    response_ = {};
    if (wire_.capacity() > kKeepWireBytes) std::string().swap(wire_);
    if (discard_body_) {
      discard_body_ = false;
      return DiscardBody();
    }
    DoRead();
  });
}

template <class Derived>
void HttpSession<Derived>::Fail(beast::error_code ec, const char* what) {
  // Timeouts, resets, aborted operations and TLS peers that leave without
  // close_notify are normal ends of a connection. Malformed or oversized
  // requests end it too (the session drops its last reference and the
  // socket closes); they are logged with --debug only, so that a client
  // cannot flood the log.
  if (ec == beast::error::timeout || ec == net::error::operation_aborted ||
      ec == net::error::connection_reset || ec == boost::beast::http::error::partial_message ||
      ec == net::error::eof || ec == ssl::error::stream_truncated) {
    return;
  }
  if (ctx_.logger && ctx_.logger->debug_enabled()) {
    std::fprintf(stderr, "session %s: %s\n", what, ec.message().c_str());
  }
}

template class HttpSession<PlainSession>;
template class HttpSession<TlsSession>;

}  // namespace cerulean::server
