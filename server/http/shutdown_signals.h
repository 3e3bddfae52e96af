// The requests to shut down that each operating system sends a server.
// Thread-safety: a ShutdownSignals is used on the thread running its
// io_context.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <functional>

namespace cerulean::server {

// Calls a handler once, on `ioc`, when the process is asked to stop:
// SIGINT (Ctrl+C) or SIGTERM everywhere; on Windows also Ctrl+Break, the
// console window closing, logoff and system shutdown. On those three
// Windows ends the process when its handler returns (console close: after
// 5 s at most), so the handler waits for main to return instead, and the
// server drains and closes its store as on SIGTERM.
class ShutdownSignals {
 public:
  explicit ShutdownSignals(boost::asio::io_context& ioc);
  ~ShutdownSignals();
  ShutdownSignals(const ShutdownSignals&) = delete;
  ShutdownSignals& operator=(const ShutdownSignals&) = delete;

  // Calls `on_stop` at the first request to stop (not if `ioc` stops first).
  void AsyncWait(std::function<void()> on_stop);

 private:
  boost::asio::signal_set signals_;
};

}  // namespace cerulean::server
