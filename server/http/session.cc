#include "server/http/session.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/ssl/error.hpp>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <optional>
#include <vector>

#include "server/admin/faults.h"
#include "server/admin/logger.h"
#include "server/formats/guid.h"
#include "server/formats/http_date.h"
#include "server/http/listener.h"
#include "server/http/router.h"
#include "server/protocol/body_budget.h"
#include "server/protocol/page_prefetch.h"

namespace cerulean::server {

namespace beast = boost::beast;
namespace net = boost::asio;
namespace ssl = boost::asio::ssl;

namespace {
// Time allowed for the TLS handshake and for close_notify at the end.
constexpr auto kTlsTimeout = std::chrono::seconds(30);
// After refusing an oversized request: how long (in all) and how much of the
// rest of it is read and dropped before closing, so that a client still
// sending sees the answer rather than a reset. A body a little over the
// limit is drained whole; the rest of an oversized header is short.
constexpr auto kDrainTimeout = std::chrono::seconds(10);
constexpr std::uint64_t kMaxDrainBytes = 8 * 1024 * 1024;
constexpr std::uint64_t kMaxHeaderDrainBytes = 1024 * 1024;
constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";

// Milliseconds of the coarse monotonic clock (a few ns, no system call), at
// least 1.
std::int64_t CoarseNowMs() {
  timespec ts;
#if defined(CLOCK_MONOTONIC_COARSE)
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
#else
  clock_gettime(CLOCK_MONOTONIC, &ts);  // no coarse clock (macOS, Windows)
#endif
  return std::int64_t{ts.tv_sec} * 1000 + ts.tv_nsec / 1000000 + 1;
}

// Bodies up to this size are copied behind the head (one buffer); larger
// ones are written from the response itself (a gathered write), not copied.
constexpr size_t kCopiedBodyBytes = 16 * 1024;

// Writes `res` (already prepared: Content-Length set) as HTTP/1.1 bytes
// into `out`, the body too if it is small, so that the response goes out
// in one write. Profiled: Beast's generic serializer cost more instructions
// per response than the whole point read behind it.
void SerializeResponse(const HttpResponse& res, std::string* out) {
  bool copy_body = res.body().size() <= kCopiedBodyBytes;
  out->clear();
  out->reserve(512 + (copy_body ? res.body().size() : 0));
  // Lengths spelled out: append(const char*) costs a strlen per call
  // whenever the compiler does not inline it (callgrind: 7 % more
  // instructions per /_health request when it did not).
  out->append(res.version() == 10 ? "HTTP/1.0 " : "HTTP/1.1 ", 9);
  unsigned code = res.result_int();
  char digits[3] = {static_cast<char>('0' + code / 100 % 10),
                    static_cast<char>('0' + code / 10 % 10), static_cast<char>('0' + code % 10)};
  out->append(digits, 3);
  out->push_back(' ');
  std::string_view reason = res.reason();
  if (reason.empty()) reason = http::obsolete_reason(res.result());
  out->append(reason);
  out->append("\r\n", 2);
  for (const auto& field : res) {
    std::string_view name = field.name_string();
    std::string_view value = field.value();
    out->append(name);
    out->append(": ", 2);
    out->append(value);
    out->append("\r\n", 2);
  }
  out->append("\r\n", 2);
  if (copy_body) out->append(res.body());
}

// The peer's address, and Nagle off; called before the socket moves into a
// stream.
std::string PreparePeer(ConnectionSocket& socket) {
  beast::error_code ec;
  socket.set_option(net::ip::tcp::no_delay(true), ec);
  auto ep = socket.remote_endpoint(ec);
  return ec ? std::string() : ep.address().to_string();
}

}  // namespace

void ThrottledLog::Log(const std::string& line) {
  auto now = std::chrono::steady_clock::now();
  size_t dropped;
  {
    std::lock_guard lock(mu_);
    if (now < next_) {
      ++dropped_;
      return;
    }
    next_ = now + interval_;
    dropped = dropped_;
    dropped_ = 0;
  }
  if (dropped > 0) {
    std::fprintf(stderr, "cerulean: %s (and %zu more like it)\n", line.c_str(), dropped);
  } else {
    std::fprintf(stderr, "cerulean: %s\n", line.c_str());
  }
}

// --- the connection registry ----------------------------------------------------

Connection::Connection(std::shared_ptr<ConnectionRegistry> registry)
    : registry_(std::move(registry)) {
  registry_->Add(this);
}

Connection::~Connection() { registry_->Remove(this); }

void ConnectionRegistry::Add(Connection* c) {
  std::lock_guard lock(mu_);
  c->index_ = connections_.size();
  connections_.push_back(c);
  count_.store(connections_.size(), std::memory_order_relaxed);
}

void ConnectionRegistry::Remove(Connection* c) {
  std::lock_guard lock(mu_);
  const size_t index = c->index_;
  connections_[index] = connections_.back();
  connections_[index]->index_ = index;
  connections_.pop_back();
  count_.store(connections_.size(), std::memory_order_relaxed);
}

bool ConnectionRegistry::EvictLongestWaiting() {
  std::shared_ptr<Connection> victim;
  {
    std::lock_guard lock(mu_);
    Connection* oldest = nullptr;
    std::int64_t oldest_since = 0;
    bool oldest_writes = false;
    const std::int64_t stalled_before = CoarseNowMs() - kStalledWriteMs;
    for (Connection* c : connections_) {
      std::int64_t since = c->waiting_since_ms_.load(std::memory_order_relaxed);
      bool writes = false;
      if (since <= 0) {
        since = c->writing_since_ms_.load(std::memory_order_relaxed);
        if (since > stalled_before) continue;
        writes = true;
      }
      if (since > 0 && (oldest == nullptr || since < oldest_since)) {
        oldest = c;
        oldest_since = since;
        oldest_writes = writes;
      }
    }
    if (oldest == nullptr) return false;
    // Marked: the next eviction picks another one, and Evict() closes the
    // connection only if it has not started answering a request (or
    // finished writing its answer) since.
    (oldest_writes ? oldest->writing_since_ms_ : oldest->waiting_since_ms_)
        .store(Connection::kEvicted, std::memory_order_relaxed);
    victim = oldest->Share();
  }
  // Outside the lock: dropping `victim` may destroy the connection, which
  // takes the lock.
  if (victim) victim->Evict();
  return true;
}

void Connection::SetWaiting(bool waiting) {
  waiting_since_ms_.store(waiting ? CoarseNowMs() : 0, std::memory_order_relaxed);
}

void Connection::SetWriting(bool writing) {
  writing_since_ms_.store(writing ? CoarseNowMs() : 0, std::memory_order_relaxed);
}

// --- the request loop ---------------------------------------------------------

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
Continuation HttpSession<Derived>::Defer(void* self) {
  // The session stays alive through the completion's shared_ptr; no other
  // operation runs on it meanwhile. The response comes back to this
  // session's I/O thread to be written.
  auto session = static_cast<HttpSession*>(self)->derived().shared_from_this();
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
  // that only grew to the last request's size took a second recvmsg for
  // most inserts (strace -c: 2.0 per insert). 8 KiB holds a typical
  // request whole. A connection that has sent a larger body (batches)
  // reads 64 KiB at a time, Beast's largest read: a 55 KB batch took
  // eleven recvmsg, each with its epoll_wait and timer update, in 8 KiB.
  const size_t read_buffer_bytes = large_bodies_ ? kLargeReadBufferBytes : kReadBufferBytes;
  if (buffer_.capacity() < read_buffer_bytes) buffer_.reserve(read_buffer_bytes);
  parser_.emplace();
  body_unread_ = false;
  body_begun_ = false;
  continue_sent_ = false;
  parser_->OnRequestLine(&HttpSession::OnRequestLine, this);
  SetWaiting(true);
  beast::get_lowest_layer(derived().stream()).expires_after(group_->limits().keep_alive_timeout);
  http::async_read_header(
      derived().stream(), buffer_, *parser_,
      beast::bind_front_handler(&HttpSession::OnHeader, derived().shared_from_this()));
}

template <class Derived>
void HttpSession<Derived>::OnRequestLine(void* self) {
  // Between two reads (the parser runs after a read completed), so the
  // stream's timer has no wait to cancel. The deadline moves from the
  // keep-alive one to the request's, unless the two are within a second of
  // each other: the common case of a request line that follows the read at
  // once costs a coarse clock read, not a timer update.
  auto* session = static_cast<HttpSession*>(self);
  const ConnectionLimits& limits = session->group_->limits();
  const std::int64_t now = CoarseNowMs();
  const std::int64_t keep_alive_deadline =
      session->waiting_since_ms() + std::chrono::milliseconds(limits.keep_alive_timeout).count();
  const std::int64_t request_deadline =
      now + std::chrono::milliseconds(limits.request_timeout).count();
  if (std::abs(request_deadline - keep_alive_deadline) > 1000) {
    beast::get_lowest_layer(session->derived().stream()).expires_after(limits.request_timeout);
  }
}

template <class Derived>
void HttpSession<Derived>::OnHeader(beast::error_code ec, std::size_t) {
  Guard("read", [&] {
    if (ec) {
      if (ec == http::error::end_of_stream) return derived().DoClose();
      if (ec == http::error::body_limit) return RejectTooLarge();
      if (ec == http::error::header_limit || ec == RequestParseError::kFieldTooLarge) {
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
    // then comes through Defer).
    Carry(ServeRequest(
        ctx_, parser_->get(),
        Arrival{peer_, in_flight, body_unread_, response_hold_ ? &*response_hold_ : nullptr},
        &HttpSession::Defer, this, &held_));
  });
}

template <class Derived>
void HttpSession<Derived>::Carry(Served&& served) {
  switch (served.next) {
    case Served::Next::kAnswered:
      return Respond(std::move(*served.response));
    case Served::Next::kLater:
      return;
    case Served::Next::kReadBody:
      return ReadBody(served.body_limit);
  }
}

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
  Carry(ServeError(ctx_, held_, ErrorReply(AzureError::kAuthorizationPermissionMismatch),
                   &HttpSession::Defer, this));
}

template <class Derived>
size_t HttpSession<Derived>::BodyNeed() {
  // What has arrived, what is buffered and one more read (Beast's largest).
  const size_t need = parser_->get().body().size() + buffer_.size() + kLargeReadBufferBytes;
  return std::min(need, body_limit_);
}

template <class Derived>
bool HttpSession<Derived>::BodyHasRoom() {
  const BodyBudget* budget = ctx_.body_budget;
  // A body larger than the budget holds all of it (body_budget.h).
  return budget == nullptr || BodyNeed() <= body_reserved_ || body_reserved_ >= budget->capacity();
}

template <class Derived>
void HttpSession<Derived>::ReserveBody() {
  BodyBudget* budget = ctx_.body_budget;
  if (BodyHasRoom()) return BodyReserved();
  // Doubling: a body takes room a few times, and holds at most twice what
  // it needs.
  const size_t target =
      std::min(std::max(BodyNeed(), body_reserved_ == 0 ? kFirstBodyBytes : 2 * body_reserved_),
               body_limit_);
  const size_t wanted = target - body_reserved_;
  if (size_t taken = budget->TryAcquire(wanted)) {
    body_reserved_ += taken;
    return BodyReserved();
  }
  // Not read meanwhile: the client is held back by TCP (or waits for 100
  // Continue), for at most the request timeout.
  budget_wait_started_ = std::chrono::steady_clock::now();
  std::weak_ptr<Derived> weak = derived().shared_from_this();
  budget_ticket_ =
      budget->Enqueue(wanted, derived().stream().get_executor(), [weak, budget](size_t taken) {
        auto self = weak.lock();
        if (!self) return budget->Release(taken);
        self->Guard("budget", [&] { self->OnBudget(taken); });
      });
  budget_timer_.emplace(derived().stream().get_executor());
  budget_timer_->expires_after(group_->limits().request_timeout);
  budget_timer_->async_wait([self = derived().shared_from_this()](beast::error_code ec) {
    if (ec) return;
    self->Guard("budget", [&] { self->OnBudgetTimeout(); });
  });
}

template <class Derived>
void HttpSession<Derived>::OnBudget(size_t taken) {
  budget_ticket_ = 0;
  body_reserved_ += taken;
  if (budget_timer_) budget_timer_->cancel();
  // The time spent waiting is not the client's: its minimum rate resumes.
  body_clock_ += std::chrono::steady_clock::now() - budget_wait_started_;
  ReserveBody();
}

template <class Derived>
void HttpSession<Derived>::OnBudgetTimeout() {
  // Granted meanwhile: the grant is on its way.
  if (budget_ticket_ == 0 || !ctx_.body_budget->Cancel(budget_ticket_)) return;
  budget_ticket_ = 0;
  Carry(ServeError(ctx_, held_, ErrorReply(AzureError::kServerBusy), &HttpSession::Defer, this));
}

template <class Derived>
void HttpSession<Derived>::BodyReserved() {
  // The body's string never grows past its room (RequestBody::reader
  // reserves nothing itself).
  if (ctx_.body_budget != nullptr) parser_->get().body().reserve(body_reserved_);
  if (body_begun_) return ContinueBody();
  body_begun_ = true;
  StartBody();
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
    if (ec == http::error::need_more) {
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
  http::async_read_some(
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
    if (ec == http::error::body_limit && body_capped_) return RefuseCappedBody();
    if (ec == http::error::body_limit) return RejectTooLarge();
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
  Carry(ServeBody(ctx_, held_, &HttpSession::Defer, this));
}

template <class Derived>
void HttpSession<Derived>::DiscardBody() {
  parser_->DiscardBody();
  // Waiting: at the connection limit, a connection that only sends what is
  // dropped makes room first.
  SetWaiting(true);
  http::async_read(
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

template <class Derived>
void HttpSession<Derived>::ReleaseBody() {
  if (parser_) std::string().swap(parser_->get().body());
  if (body_reserved_ > 0) {
    ctx_.body_budget->Release(body_reserved_);
    body_reserved_ = 0;
  }
}

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
void HttpSession<Derived>::RejectTooLarge() {
  // The headers were read; answer from them without the body, then read and
  // drop the body so that a client still sending it sees the 413, not a reset.
  // Body bytes already buffered count as drained. A client that waits for
  // 100 Continue sends no body: close right after the answer.
  SetWaiting(false);
  // Refused while its body was read (a chunked body over the limit): the
  // request prepared from its head goes.
  held_.req.reset();
  ReleaseBody();
  // Beast reports a Content-Length over the limit before it marks the header
  // done (content_length() asserts then): take the length from the field
  // itself when it was stored.
  std::optional<std::uint64_t> length;  // none for a chunked body
  if (parser_->is_header_done()) {
    if (auto l = parser_->content_length()) length = *l;
  } else if (auto it = parser_->get().find(http::field::content_length);
             it != parser_->get().end()) {
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
  res.set(http::field::date, HttpDateNow());
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
  res.set(http::field::content_type, "text/plain; charset=utf-8");
  res.set(http::field::date, HttpDateNow());
  res.body() = line_too_long ? "Request URL Too Long" : "Request Header Fields Too Large";
  res.keep_alive(false);
  res.prepare_payload();
  DoWrite(std::move(res), true);
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
    if (close && drain_left_ > 0) {
      // One deadline for the whole drain: a client that trickles cannot
      // keep the connection.
      beast::get_lowest_layer(derived().stream()).expires_after(kDrainTimeout);
      return DoDrain();
    }
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
      ec == net::error::connection_reset || ec == http::error::partial_message ||
      ec == net::error::eof || ec == ssl::error::stream_truncated) {
    return;
  }
  if (ctx_.logger && ctx_.logger->debug_enabled()) {
    std::fprintf(stderr, "session %s: %s\n", what, ec.message().c_str());
  }
}

template class HttpSession<PlainSession>;
template class HttpSession<TlsSession>;

// --- plain HTTP -----------------------------------------------------------------

PlainSession::PlainSession(ConnectionSocket&& socket, const ServerContext& ctx,
                           std::shared_ptr<SessionGroup> group)
    : HttpSession(ctx, std::move(group), PreparePeer(socket)), stream_(std::move(socket)) {}

void PlainSession::Run() {
  net::dispatch(stream_.get_executor(),
                [self = shared_from_this()] { self->Guard("start", [&] { self->DoRead(); }); });
}

void PlainSession::DoClose() {
  beast::error_code ec;
  stream_.socket().shutdown(net::ip::tcp::socket::shutdown_send, ec);
}

// --- HTTPS ----------------------------------------------------------------------

TlsSession::TlsSession(ConnectionSocket&& socket, ssl::context& tls, const ServerContext& ctx,
                       std::shared_ptr<SessionGroup> group)
    : HttpSession(ctx, std::move(group), PreparePeer(socket)), stream_(std::move(socket), tls) {}

void TlsSession::Run() {
  // The handshake runs on the connection's I/O thread like everything after it.
  net::dispatch(stream_.get_executor(), [self = shared_from_this()] {
    self->Guard("handshake", [&] {
      // Waiting: a connection that does not complete its handshake can be
      // evicted like one that does not send its request.
      self->SetWaiting(true);
      beast::get_lowest_layer(self->stream_).expires_after(kTlsTimeout);
      self->stream_.async_handshake(ssl::stream_base::server,
                                    beast::bind_front_handler(&TlsSession::OnHandshake, self));
    });
  });
}

void TlsSession::OnHandshake(beast::error_code ec) {
  Guard("handshake", [&] {
    if (ec) return Fail(ec, "handshake");
    DoRead();
  });
}

void TlsSession::DoClose() {
  SetWaiting(false);
  beast::get_lowest_layer(stream_).expires_after(kTlsTimeout);
  stream_.async_shutdown(beast::bind_front_handler(&TlsSession::OnShutdown, shared_from_this()));
}

void TlsSession::OnShutdown(beast::error_code ec) {
  if (ec) Fail(ec, "shutdown");
  beast::error_code ignored;
  beast::get_lowest_layer(stream_).socket().shutdown(net::ip::tcp::socket::shutdown_both, ignored);
}

}  // namespace cerulean::server
