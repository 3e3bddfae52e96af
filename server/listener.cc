#include "server/listener.h"

#include <cstdio>

#include "server/session.h"

namespace cerulean::server {

namespace net = boost::asio;
using tcp = net::ip::tcp;

Listener::Listener(std::vector<net::io_context*> workers, const ServerContext& ctx,
                   net::ssl::context* tls)
    : workers_(std::move(workers)), acceptor_(*workers_.front()), ctx_(ctx), tls_(tls) {}

std::string Listener::Open(const std::string& host, unsigned short port) {
  boost::system::error_code ec;
  auto address = net::ip::make_address(host == "localhost" ? "127.0.0.1" : host, ec);
  if (ec) return "invalid --tableHost '" + host + "': " + ec.message();
  tcp::endpoint endpoint{address, port};
  acceptor_.open(endpoint.protocol(), ec);
  if (ec) return "open: " + ec.message();
  acceptor_.set_option(net::socket_base::reuse_address(true), ec);
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
  });
}

void Listener::DoAccept() {
  net::io_context& worker = *workers_[next_worker_];
  next_worker_ = (next_worker_ + 1) % workers_.size();
  acceptor_.async_accept(
      worker.get_executor(),
      [self = shared_from_this()](boost::system::error_code ec, ConnectionSocket socket) {
        self->OnAccept(ec, std::move(socket));
      });
}

void Listener::OnAccept(boost::system::error_code ec, ConnectionSocket socket) {
  if (ec == net::error::operation_aborted || !acceptor_.is_open()) return;
  if (ec) {
    std::fprintf(stderr, "accept: %s\n", ec.message().c_str());
  } else if (tls_ != nullptr) {
    std::make_shared<TlsSession>(std::move(socket), *tls_, ctx_)->Run();
  } else {
    std::make_shared<PlainSession>(std::move(socket), ctx_)->Run();
  }
  DoAccept();
}

}  // namespace cerulean::server
