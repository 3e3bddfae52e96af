// Refusing a request too large to read (413 for its body, 414/431 for its
// head) and draining what its client still sends before closing, so that
// the client sees the answer rather than a reset.
#include <algorithm>
#include <charconv>
#include <chrono>
#include <optional>

#include "server/formats/guid.h"
#include "server/formats/http_date.h"
#include "server/http/session.h"

namespace cerulean::server {

namespace beast = boost::beast;
namespace net = boost::asio;

namespace {
// How long (in all) and how much of the rest of a refused request is read
// and dropped before closing. A body a little over the limit is drained
// whole; the rest of an oversized header is short.
constexpr auto kDrainTimeout = std::chrono::seconds(10);
constexpr std::uint64_t kMaxDrainBytes = 8 * 1024 * 1024;
constexpr std::uint64_t kMaxHeaderDrainBytes = 1024 * 1024;
}  // namespace

template <class Derived>
std::uint64_t HttpSession<Derived>::DrainUnreadBody(std::optional<std::uint64_t> length) {
  std::uint64_t buffered = buffer_.size();
  std::uint64_t left = length ? (*length > buffered ? *length - buffered : 0) : kMaxDrainBytes;
  left = std::min<std::uint64_t>(left, kMaxDrainBytes);
  if (parser_->expects_continue() && !continue_sent_ && buffered == 0) left = 0;
  buffer_.consume(buffer_.size());
  return left;
}

template <class Derived>
void HttpSession<Derived>::RejectTooLarge() {
  // The headers were read; answer from them without the body, then read and
  // drop the body so that a client still sending it sees the 413, not a reset.
  // Body bytes already buffered count as drained. A client that waits for
  // 100 Continue sends no body: close right after the answer.
  SetWaiting(false);
  // Refused while its body was read (a chunked body over the limit): the
  // request prepared from its head goes.
  if (exchange_) exchange_->req.reset();
  ReleaseBody();
  // Beast reports a Content-Length over the limit before it marks the header
  // done (content_length() asserts then): take the length from the field
  // itself when it was stored.
  std::optional<std::uint64_t> length;  // none for a chunked body
  if (parser_->is_header_done()) {
    if (auto l = parser_->content_length()) length = *l;
  } else if (auto it = parser_->get().find("Content-Length"); it != parser_->get().end()) {
    std::uint64_t v = 0;
    const auto text = it->value();
    if (std::from_chars(text.data(), text.data() + text.size(), v).ec == std::errc()) length = v;
  }
  drain_left_ = DrainUnreadBody(length);
  HttpRequest req = parser_->release();
  req.body().clear();
  req.keep_alive(false);
  Request r(req);
  r.request_id = NewRequestId();
  BeginRequest();
  HttpResponse res = ErrorResponse(r, ErrorReply(AzureError::kRequestBodyTooLarge));
  res.set("x-ms-request-id", r.request_id);
  res.set("Date", HttpDateNow());
  res.keep_alive(false);
  res.prepare_payload();
  DoWrite(std::move(res), true);
}

template <class Derived>
void HttpSession<Derived>::RejectHeaderTooLarge() {
  // Like HTTP.sys: a plain-text 414 when the request line alone exceeds the
  // limit, else 431, then drain what the client is still sending.
  SetWaiting(false);
  // The parser has consumed the request line iff it was complete.
  bool line_too_long = parser_->get().target().empty();
  drain_left_ = kMaxHeaderDrainBytes;
  buffer_.consume(buffer_.size());
  BeginRequest();
  HttpResponse res{
      line_too_long ? http::status::uri_too_long : http::status::request_header_fields_too_large,
      11};
  res.set("Content-Type", "text/plain; charset=utf-8");
  res.set("Date", HttpDateNow());
  res.body() = line_too_long ? "Request URL Too Long" : "Request Header Fields Too Large";
  res.keep_alive(false);
  res.prepare_payload();
  DoWrite(std::move(res), true);
}

template <class Derived>
void HttpSession<Derived>::StartDrain() {
  beast::get_lowest_layer(derived().stream()).expires_after(kDrainTimeout);
  DoDrain();
}

template <class Derived>
void HttpSession<Derived>::DoDrain() {
  if (drain_left_ == 0) return derived().DoClose();
  auto chunk =
      buffer_.prepare(static_cast<std::size_t>(std::min<std::uint64_t>(drain_left_, 64 * 1024)));
  derived().stream().async_read_some(
      chunk, beast::bind_front_handler(&HttpSession::OnDrain, derived().shared_from_this()));
}

template <class Derived>
void HttpSession<Derived>::OnDrain(beast::error_code ec, std::size_t bytes) {
  Guard("drain", [&] {
    // The prepared bytes are never committed: they are dropped.
    if (ec == net::error::eof) return derived().DoClose();
    if (ec) return Fail(ec, "drain");
    drain_left_ -= std::min<std::uint64_t>(bytes, drain_left_);
    DoDrain();
  });
}

template std::uint64_t HttpSession<PlainSession>::DrainUnreadBody(std::optional<std::uint64_t>);
template void HttpSession<PlainSession>::RejectTooLarge();
template void HttpSession<PlainSession>::RejectHeaderTooLarge();
template void HttpSession<PlainSession>::StartDrain();
template void HttpSession<PlainSession>::DoDrain();
template void HttpSession<PlainSession>::OnDrain(beast::error_code, std::size_t);
template std::uint64_t HttpSession<TlsSession>::DrainUnreadBody(std::optional<std::uint64_t>);
template void HttpSession<TlsSession>::RejectTooLarge();
template void HttpSession<TlsSession>::RejectHeaderTooLarge();
template void HttpSession<TlsSession>::StartDrain();
template void HttpSession<TlsSession>::DoDrain();
template void HttpSession<TlsSession>::OnDrain(beast::error_code, std::size_t);

}  // namespace cerulean::server
