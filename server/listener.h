// Accepts TCP connections and starts a session for each (Beast
// advanced_server pattern): PlainSession, or TlsSession when the server was
// given a TLS context (then the port speaks HTTPS only, like Azurite with
// --cert). Each connection runs on its own strand.
// Thread-safety: Run() is called once; Stop() from any thread.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <memory>
#include <string>

#include "server/request.h"
#include "server/session.h"

namespace cerulean::server {

class Listener : public std::enable_shared_from_this<Listener> {
 public:
  // REQUIRES: `tls` (null for plain HTTP) and `ctx` outlive the listener and
  // its sessions.
  Listener(boost::asio::io_context& ioc, const ServerContext& ctx,
           boost::asio::ssl::context* tls = nullptr);
  // Binds and listens; returns an error message on failure.
  std::string Open(const std::string& host, unsigned short port);
  unsigned short port() const;
  void Run();
  // Stops accepting new connections.
  void Stop();

 private:
  void DoAccept();
  void OnAccept(boost::system::error_code ec, ConnectionSocket socket);

  boost::asio::io_context& ioc_;
  boost::asio::ip::tcp::acceptor acceptor_;
  const ServerContext& ctx_;
  boost::asio::ssl::context* tls_;
};

// Ends every open keep-alive connection once its in-flight request is done.
void RequestSessionsClose();
// Requests read but not yet fully answered.
int InFlightRequests();

}  // namespace cerulean::server
