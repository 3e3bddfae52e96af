// Accepts TCP connections and starts a Session for each (Beast
// advanced_server pattern). Each connection runs on its own strand.
// Thread-safety: Run() is called once; Stop() from any thread.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <memory>
#include <string>

#include "server/request.h"

namespace cerulean::server {

class Listener : public std::enable_shared_from_this<Listener> {
 public:
  Listener(boost::asio::io_context& ioc, const ServerContext& ctx);
  // Binds and listens; returns an error message on failure.
  std::string Open(const std::string& host, unsigned short port);
  unsigned short port() const;
  void Run();
  // Stops accepting new connections.
  void Stop();

 private:
  void DoAccept();
  void OnAccept(boost::system::error_code ec, boost::asio::ip::tcp::socket socket);

  boost::asio::io_context& ioc_;
  boost::asio::ip::tcp::acceptor acceptor_;
  const ServerContext& ctx_;
};

// Ends every open keep-alive connection once its in-flight request is done.
void RequestSessionsClose();
// Requests read but not yet fully answered.
int InFlightRequests();

}  // namespace cerulean::server
