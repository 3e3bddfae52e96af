#include "server/session.h"

#include <atomic>
#include <boost/asio/dispatch.hpp>
#include <chrono>
#include <cstdio>

#include "server/listener.h"
#include "server/logger.h"
#include "server/router.h"
#include "server/text.h"

namespace cerulean::server {

namespace beast = boost::beast;
namespace net = boost::asio;

namespace {
constexpr auto kReadTimeout = std::chrono::seconds(60);
std::atomic<bool> g_closing{false};
std::atomic<int> g_in_flight{0};

// True iff answering `req` cannot wait long: reads of one entity and the
// reserved /_ endpoints other than reset. They run on the I/O thread.
bool IsQuick(const HttpRequest& req) {
  if (req.method() != http::verb::get && req.method() != http::verb::head &&
      req.method() != http::verb::options) {
    return false;
  }
  std::string_view target = req.target();
  if (target.starts_with("/_")) return true;
  size_t query = target.find('?');
  std::string_view path = target.substr(0, query);
  // A point read: "...table(PartitionKey=...,RowKey=...)".
  return path.ends_with(")") && path.find("RowKey") != std::string_view::npos;
}

}  // namespace

void RequestSessionsClose() { g_closing = true; }
int InFlightRequests() { return g_in_flight.load(); }

Session::Session(net::ip::tcp::socket&& socket, const ServerContext& ctx)
    : stream_(std::move(socket)), ctx_(ctx) {
  beast::error_code ec;
  auto ep = stream_.socket().remote_endpoint(ec);
  if (!ec) peer_ = ep.address().to_string();
  stream_.socket().set_option(net::ip::tcp::no_delay(true), ec);
}

void Session::Run() {
  net::dispatch(stream_.get_executor(), beast::bind_front_handler(&Session::DoRead, shared_from_this()));
}

void Session::DoRead() {
  parser_.emplace();
  parser_->body_limit(kMaxBodyBytes);
  parser_->header_limit(64 * 1024);
  stream_.expires_after(kReadTimeout);
  http::async_read(stream_, buffer_, *parser_, beast::bind_front_handler(&Session::OnRead, shared_from_this()));
}

void Session::OnRead(beast::error_code ec, std::size_t) {
  if (ec == http::error::end_of_stream) return DoClose();
  if (ec == http::error::body_limit) return RejectTooLarge();
  if (ec) return Fail(ec, "read");
  ++g_in_flight;
  request_ = parser_->release();
  if (ctx_.blocking_pool == nullptr || IsQuick(request_)) return Respond(HandleRequest(ctx_, request_, peer_));
  // The request may wait on storage: answer it on the blocking pool and come
  // back to this session's strand to write. The session stays alive through
  // the handler's shared_ptr; no other operation runs on it meanwhile.
  net::post(*ctx_.blocking_pool, [self = shared_from_this()] {
    HttpResponse res = HandleRequest(self->ctx_, self->request_, self->peer_);
    net::post(self->stream_.get_executor(), [self, res = std::move(res)]() mutable { self->Respond(std::move(res)); });
  });
}

void Session::Respond(HttpResponse res) {
  request_ = {};
  bool close = res.need_eof() || g_closing.load();
  if (close) res.keep_alive(false);
  DoWrite(std::move(res), close);
}

void Session::RejectTooLarge() {
  // The headers were read; answer from them without the body.
  HttpRequest req = parser_->release();
  req.body().clear();
  req.keep_alive(false);
  Request r(req);
  r.request_id = NewRequestId();
  ++g_in_flight;
  HttpResponse res = ErrorResponse(r, ErrorReply(AzureError::kRequestBodyTooLarge));
  res.set("x-ms-request-id", r.request_id);
  res.set(http::field::date, HttpDateNow());
  res.keep_alive(false);
  res.prepare_payload();
  DoWrite(std::move(res), true);
}

void Session::DoWrite(HttpResponse res, bool close) {
  response_ = std::move(res);
  http::async_write(stream_, response_,
                    beast::bind_front_handler(&Session::OnWrite, shared_from_this(), close));
}

void Session::OnWrite(bool close, beast::error_code ec, std::size_t) {
  --g_in_flight;
  if (ec) return Fail(ec, "write");
  if (close) return DoClose();
  response_ = {};
  DoRead();
}

void Session::DoClose() {
  beast::error_code ec;
  stream_.socket().shutdown(net::ip::tcp::socket::shutdown_send, ec);
}

void Session::Fail(beast::error_code ec, const char* what) {
  // Timeouts, resets and aborted operations are normal ends of a connection.
  if (ec == beast::error::timeout || ec == net::error::operation_aborted || ec == net::error::connection_reset ||
      ec == http::error::partial_message || ec == net::error::eof) {
    return;
  }
  if (ctx_.logger && ctx_.logger->debug_enabled()) {
    std::fprintf(stderr, "session %s: %s\n", what, ec.message().c_str());
  }
}

}  // namespace cerulean::server
