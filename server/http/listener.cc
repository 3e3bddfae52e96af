#include "server/http/listener.h"

#include <cerrno>
#include <cstdio>

#include "server/http/session.h"

namespace cerulean::server {

namespace net = boost::asio;
using tcp = net::ip::tcp;

namespace {
// Pauses after an accept failed for lack of descriptors or memory: short
// when a waiting connection was closed to free a descriptor (it is free
// within a moment), longer when none could be.
constexpr auto kAcceptRetryAfterEviction = std::chrono::milliseconds(10);
constexpr auto kAcceptBackoff = std::chrono::milliseconds(100);
}  // namespace

Listener::Listener(std::vector<net::io_context*> workers, const ServerContext& ctx,
                   const ConnectionLimits& limits, net::ssl::context* tls)
    : workers_(std::move(workers)),
      acceptor_(*workers_.front()),
      backoff_(*workers_.front()),
      ctx_(ctx),
      tls_(tls),
      sessions_(std::make_shared<SessionGroup>(limits)) {}

std::string Listener::Open(const std::string& host, unsigned short port) {
  boost::system::error_code ec;
  auto address = net::ip::make_address(host == "localhost" ? "127.0.0.1" : host, ec);
  if (ec) return "invalid --tableHost '" + host + "': " + ec.message();
  tcp::endpoint endpoint{address, port};
  acceptor_.open(endpoint.protocol(), ec);
  if (ec) return "open: " + ec.message();
#if !defined(_WIN32)
  // Rebinding a port whose old connections are in TIME_WAIT. Windows allows
  // that without it, and there SO_REUSEADDR would let a second server bind
  // the same port.
  acceptor_.set_option(net::socket_base::reuse_address(true), ec);
#endif
  acceptor_.bind(endpoint, ec);
  if (ec) return "bind " + host + ":" + std::to_string(port) + ": " + ec.message();
  acceptor_.listen(net::socket_base::max_listen_connections, ec);
  if (ec) return "listen: " + ec.message();
  return {};
}

unsigned short Listener::port() const {
  boost::system::error_code ec;
  return acceptor_.local_endpoint(ec).port();
}

void Listener::Run() { DoAccept(); }

void Listener::Stop() {
  net::post(acceptor_.get_executor(), [self = shared_from_this()] {
    boost::system::error_code ec;
    self->acceptor_.close(ec);
    self->backoff_.cancel();
  });
}

void Listener::DoAccept() {
  net::io_context& worker = *workers_[next_worker_];
  next_worker_ = (next_worker_ + 1) % workers_.size();
  try {
    acceptor_.async_accept(
        worker.get_executor(),
        [self = shared_from_this()](boost::system::error_code ec, ConnectionSocket socket) {
          self->OnAccept(ec, std::move(socket));
        });
  } catch (const std::exception& e) {
    // Out of memory starting the operation: try again later rather than
    // never accept again.
    accept_log_.Log(std::string("accept: ") + e.what() + "; retrying");
    RetryLater(kAcceptBackoff);
  }
}

void Listener::RetryLater(std::chrono::milliseconds delay) {
  backoff_.expires_after(delay);
  backoff_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
    if (!ec && self->acceptor_.is_open()) self->DoAccept();
  });
}

bool Listener::IsExhaustion(boost::system::error_code ec) {
  if (ec.category() != boost::system::system_category()) return false;
  int e = ec.value();
  return e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM;
}

void Listener::OnAccept(boost::system::error_code ec, ConnectionSocket socket) {
  if (ec == net::error::operation_aborted || !acceptor_.is_open()) return;
  ConnectionRegistry& connections = sessions_->connections();
  try {
    if (ec && IsExhaustion(ec)) {
      // Accepting again at once would fail at once: a busy loop. A waiting
      // connection gives its descriptor back; the next try comes after a
      // pause, and the log says so once per interval.
      accept_log_.Log("accept: " + ec.message() + " (" + std::to_string(connections.Count()) +
                      " connections open); pausing accept");
      bool evicted = connections.EvictLongestWaiting();
      RetryLater(evicted ? kAcceptRetryAfterEviction : kAcceptBackoff);
      return;
    }
    if (ec) {
      accept_log_.Log("accept: " + ec.message());
    } else if (connections.Count() >= sessions_->limits().max_connections &&
               !connections.EvictLongestWaiting()) {
      limit_log_.Log("connection limit (" + std::to_string(sessions_->limits().max_connections) +
                     ") reached and every connection is busy; closing new connections");
      boost::system::error_code ignored;
      socket.close(ignored);
    } else if (tls_ != nullptr) {
      std::make_shared<TlsSession>(std::move(socket), *tls_, ctx_, sessions_)->Run();
    } else {
      std::make_shared<PlainSession>(std::move(socket), ctx_, sessions_)->Run();
    }
  } catch (const std::exception& e) {
    // E.g. bad_alloc creating a session: that connection is dropped (its
    // socket closes with it), accepting goes on.
    accept_log_.Log(std::string("accept: ") + e.what());
  }
  DoAccept();
}

}  // namespace cerulean::server
