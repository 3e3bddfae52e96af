// What the sessions of one listener share: their limits, their connection
// registry, their failure log, their requests in flight and the request to
// close. The listener creates one and hands it to each session it starts
// (session.h); a session keeps it alive, so it may outlive the listener.
// Thread-safety: every member may be used from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>

#include "server/http/connection_registry.h"
#include "server/http/throttled_log.h"

namespace cerulean::server {

// Limits on a listener's connections (Listener, SessionGroup).
struct ConnectionLimits {
  // Open connections; at the cap, a new connection replaces the one that
  // has waited longest for its next request, or is closed if none waits.
  size_t max_connections = 1000;
  // Time a connection has to begin its next request (send its request line,
  // or its whole header if the first bytes do not hold the request line),
  // after connecting or after its previous response (idle keep-alive).
  std::chrono::seconds keep_alive_timeout{60};
  // Time it then has to send the rest of that request (headers and body):
  // slow senders (slowloris) are closed when it runs out. A body waiting
  // for the body budget waits at most this long, then gets 503 ServerBusy.
  std::chrono::seconds request_timeout{60};
};

// What a listener's sessions share: its limits, its registry of open
// connections, the log of failures that close a connection, the requests
// they are answering (for the drain on shutdown, and the load each request
// is told about: Request::in_flight) and whether they were asked to close.
// Each listener has its own, so two servers in one process share nothing.
// Thread-safety: every member may be used from any thread.
class SessionGroup {
 public:
  explicit SessionGroup(const ConnectionLimits& limits = {}) : limits_(limits) {}
  SessionGroup(const SessionGroup&) = delete;
  SessionGroup& operator=(const SessionGroup&) = delete;

  const ConnectionLimits& limits() const { return limits_; }
  ConnectionRegistry& connections() { return connections_; }
  // Failures that end a connection abnormally (exceptions), at most one
  // line a second.
  ThrottledLog& failure_log() { return failure_log_; }
  // Requests read but not yet fully answered.
  int InFlight() const { return in_flight_.load(std::memory_order_relaxed); }
  // Ends every open keep-alive connection once its in-flight request is
  // done.
  void RequestClose() { closing_.store(true, std::memory_order_relaxed); }
  bool closing() const { return closing_.load(std::memory_order_relaxed); }
  // A request begins (returns the count with it) or ends.
  int Begin() { return in_flight_.fetch_add(1, std::memory_order_relaxed) + 1; }
  void End() { in_flight_.fetch_sub(1, std::memory_order_relaxed); }

 private:
  const ConnectionLimits limits_;
  ConnectionRegistry connections_;
  ThrottledLog failure_log_{std::chrono::seconds(1)};
  std::atomic<int> in_flight_{0};
  std::atomic<bool> closing_{false};
};

}  // namespace cerulean::server
