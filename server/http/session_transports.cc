// The two transports of the request loop: PlainSession over TCP, and
// TlsSession, which adds the handshake before it and close_notify after.
#include <boost/asio/dispatch.hpp>
#include <chrono>
#include <string>

#include "server/http/session.h"

namespace cerulean::server {

namespace beast = boost::beast;
namespace net = boost::asio;
namespace ssl = boost::asio::ssl;

namespace {
// Time allowed for the TLS handshake and for close_notify at the end.
constexpr auto kTlsTimeout = std::chrono::seconds(30);

// The peer's address, and Nagle off; called before the socket moves into a
// stream.
std::string PreparePeer(ConnectionSocket& socket) {
  beast::error_code ec;
  socket.set_option(net::ip::tcp::no_delay(true), ec);
  auto ep = socket.remote_endpoint(ec);
  return ec ? std::string() : ep.address().to_string();
}

}  // namespace

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
