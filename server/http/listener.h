// Accepts TCP connections and starts a session for each (Beast
// advanced_server pattern): PlainSession, or TlsSession when the server was
// given a TLS context (then the port speaks HTTPS only, like Azurite with
// --cert). Each connection is handed to one of the I/O threads' io_contexts
// (round robin) and runs on it alone, so its handlers never run concurrently
// and need no strand.
//
// Hostile or unlucky conditions: at ConnectionLimits::max_connections, a new
// connection replaces the one that has waited longest for a request (or is
// closed if every connection is answering one). When accept fails for lack
// of descriptors or memory (EMFILE, ENFILE, ENOBUFS, ENOMEM) the listener
// evicts a waiting connection, pauses, and retries on a timer, logging once
// per interval; other accept errors concern one connection and accepting
// goes on.
// Thread-safety: Run() is called once; Stop() from any thread.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <memory>
#include <string>
#include <vector>

#include "server/http/session.h"
#include "server/protocol/request.h"

namespace cerulean::server {

class Listener : public std::enable_shared_from_this<Listener> {
 public:
  // Accepts on `workers[0]`; each connection runs on one of `workers`, each
  // of which must be run by exactly one thread.
  // Its connections keep to `limits`.
  // REQUIRES: `workers` is not empty; they, `tls` (null for plain HTTP) and
  // `ctx` outlive the listener and its sessions.
  Listener(std::vector<boost::asio::io_context*> workers, const ServerContext& ctx,
           const ConnectionLimits& limits = {}, boost::asio::ssl::context* tls = nullptr);
  // Binds and listens; returns an error message on failure.
  std::string Open(const std::string& host, unsigned short port);
  unsigned short port() const;
  void Run();
  // Stops accepting new connections.
  void Stop();
  // The sessions of this listener's connections (limits, open connections,
  // requests in flight, close).
  SessionGroup& sessions() { return *sessions_; }

 private:
  void DoAccept();
  void OnAccept(boost::system::error_code ec, ConnectionSocket socket);
  // True iff `ec` means the process or system is out of a resource that
  // closing connections gives back.
  static bool IsExhaustion(boost::system::error_code ec);
  // Accepts again after `delay`.
  void RetryLater(std::chrono::milliseconds delay);

  std::vector<boost::asio::io_context*> workers_;
  size_t next_worker_ = 0;  // the io_context of the next connection
  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::steady_timer backoff_;  // pauses accepting after exhaustion
  ThrottledLog accept_log_{std::chrono::seconds(10)};
  ThrottledLog limit_log_{std::chrono::seconds(10)};
  const ServerContext& ctx_;
  boost::asio::ssl::context* tls_;
  // Shared with every session, which may outlive the listener.
  std::shared_ptr<SessionGroup> sessions_;
};

}  // namespace cerulean::server
