// Reading a request's body once the router asked for it: 100 Continue if
// the client waits for it, the minimum rate while it arrives, the request's
// own limit; or dropping the body of a request answered without it.
#include <algorithm>
#include <boost/asio/write.hpp>
#include <chrono>
#include <string_view>

#include "server/http/session.h"
#include "server/runtime/body_budget.h"

namespace cerulean::server {

namespace beast = boost::beast;
namespace net = boost::asio;

namespace {
constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
}  // namespace

template <class Derived>
void HttpSession<Derived>::ReadBody(size_t limit) {
  // The announced length, or all that a chunked body may hold.
  const auto length = parser_->content_length();
  body_limit_ = length ? static_cast<size_t>(*length) : kMaxBodyBytes;
  body_capped_ = limit != 0 && limit < body_limit_;
  if (body_capped_) {
    // Longer than the request may be (router.h, kReadOnlyBatchBodyBytes):
    // refused now if announced, else once a chunk passes the limit.
    if (length) return RefuseCappedBody();
    body_limit_ = limit;
    parser_->body_limit(limit);
  }
  body_begun_ = false;
  body_clock_ = std::chrono::steady_clock::now();
  ReserveBody();
}

template <class Derived>
void HttpSession<Derived>::RefuseCappedBody() {
  ServeError(ctx_, *exchange_, ErrorReply(AzureError::kAuthorizationPermissionMismatch));
}

template <class Derived>
void HttpSession<Derived>::StartBody() {
  // A client that did not wait for 100 Continue has begun the body: no
  // need to invite it (RFC 9110 §10.1.1).
  if (parser_->expects_continue() && buffer_.size() == 0) {
    continue_sent_ = true;
    net::async_write(
        derived().stream(), net::buffer(kContinue.data(), kContinue.size()),
        beast::bind_front_handler(&HttpSession::OnContinue, derived().shared_from_this()));
    return;
  }
  ReadBodyBytes();
}

template <class Derived>
void HttpSession<Derived>::OnContinue(beast::error_code ec, std::size_t) {
  Guard("continue", [&] {
    if (ec) return Fail(ec, "write");
    ReadBodyBytes();
  });
}

template <class Derived>
void HttpSession<Derived>::ReadBodyBytes() {
  // A short body usually came with its head: parsed here, it costs no trip
  // through the io_context.
  parser_->eager(true);
  beast::error_code ec;
  while (buffer_.size() > 0 && !parser_->is_done()) {
    const size_t used = parser_->put(buffer_.data(), ec);
    buffer_.consume(used);
    if (ec == boost::beast::http::error::need_more) {
      ec = {};
      break;
    }
    if (ec || used == 0) break;
  }
  if (ec || parser_->is_done()) return BodyRead(ec);
  ContinueBody();
}

template <class Derived>
void HttpSession<Derived>::ContinueBody() {
  if (!BodyHasRoom()) return ReserveBody();
  // The minimum rate: by now, what has arrived and one more read, at
  // kMinBodyBytesPerSecond after the grace period; never past the request
  // timeout.
  const size_t due = parser_->get().body().size() + kLargeReadBufferBytes;
  const auto allowed = std::min<std::chrono::steady_clock::duration>(
      std::chrono::seconds(kBodyGraceSeconds) +
          std::chrono::milliseconds(due * 1000 / kMinBodyBytesPerSecond),
      group_->limits().request_timeout);
  beast::get_lowest_layer(derived().stream()).expires_at(body_clock_ + allowed);
  body_deadline_ = true;
  boost::beast::http::async_read_some(
      derived().stream(), buffer_, *parser_,
      beast::bind_front_handler(&HttpSession::OnBody, derived().shared_from_this()));
}

template <class Derived>
void HttpSession<Derived>::OnBody(beast::error_code ec, std::size_t) {
  Guard("read", [&] {
    if (ec || parser_->is_done()) return BodyRead(ec);
    ContinueBody();
  });
}

template <class Derived>
void HttpSession<Derived>::BodyRead(beast::error_code ec) {
  if (ec) {
    // A chunked body over the limit: the request's, or the protocol's.
    if (ec == boost::beast::http::error::body_limit && body_capped_) return RefuseCappedBody();
    if (ec == boost::beast::http::error::body_limit) return RejectTooLarge();
    return Fail(ec, "read");
  }
  body_unread_ = false;
  // The body's deadline does not bound the operation and its answer: they
  // get the request timeout from here.
  if (body_deadline_) {
    body_deadline_ = false;
    beast::get_lowest_layer(derived().stream()).expires_after(group_->limits().request_timeout);
  }
  large_bodies_ = parser_->get().body().size() > kReadBufferBytes;
  ServeBody(ctx_, *exchange_);
}

template <class Derived>
void HttpSession<Derived>::DiscardBody() {
  parser_->DiscardBody();
  // Waiting: at the connection limit, a connection that only sends what is
  // dropped makes room first.
  SetWaiting(true);
  boost::beast::http::async_read(
      derived().stream(), buffer_, *parser_,
      beast::bind_front_handler(&HttpSession::OnDiscarded, derived().shared_from_this()));
}

template <class Derived>
void HttpSession<Derived>::OnDiscarded(beast::error_code ec, std::size_t) {
  Guard("read", [&] {
    if (ec) return Fail(ec, "read");
    if (evicted()) return CloseNow();
    DoRead();
  });
}

template void HttpSession<PlainSession>::ReadBody(size_t);
template void HttpSession<PlainSession>::RefuseCappedBody();
template void HttpSession<PlainSession>::StartBody();
template void HttpSession<PlainSession>::OnContinue(beast::error_code, std::size_t);
template void HttpSession<PlainSession>::ReadBodyBytes();
template void HttpSession<PlainSession>::ContinueBody();
template void HttpSession<PlainSession>::OnBody(beast::error_code, std::size_t);
template void HttpSession<PlainSession>::BodyRead(beast::error_code);
template void HttpSession<PlainSession>::DiscardBody();
template void HttpSession<PlainSession>::OnDiscarded(beast::error_code, std::size_t);
template void HttpSession<TlsSession>::ReadBody(size_t);
template void HttpSession<TlsSession>::RefuseCappedBody();
template void HttpSession<TlsSession>::StartBody();
template void HttpSession<TlsSession>::OnContinue(beast::error_code, std::size_t);
template void HttpSession<TlsSession>::ReadBodyBytes();
template void HttpSession<TlsSession>::ContinueBody();
template void HttpSession<TlsSession>::OnBody(beast::error_code, std::size_t);
template void HttpSession<TlsSession>::BodyRead(beast::error_code);
template void HttpSession<TlsSession>::DiscardBody();
template void HttpSession<TlsSession>::OnDiscarded(beast::error_code, std::size_t);

}  // namespace cerulean::server
