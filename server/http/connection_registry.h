// The open connections of a listener, with how long each has waited for
// its client, so that at the connection cap the one that has waited longest
// can be closed (ConnectionLimits::max_connections). A Connection registers
// itself for its lifetime; the sessions derive from it (session.h).
// Thread-safety: the registry's members may be called from any thread; a
// Connection's own setters belong to its I/O thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <ctime>
#include <memory>
#include <mutex>
#include <vector>

#include "storage/platform.h"

namespace cerulean::server {

// storage::CoarseMonotonicMs, at least 1 (0 means "not waiting"): the
// clock of a connection's waiting and writing times.
inline std::int64_t CoarseNowMs() { return storage::CoarseMonotonicMs() + 1; }

class Connection;

// The open connections of one listener, so that it can enforce
// ConnectionLimits::max_connections.
// Thread-safety: every member may be called from any thread.
class ConnectionRegistry {
 public:
  ConnectionRegistry() = default;
  ConnectionRegistry(const ConnectionRegistry&) = delete;
  ConnectionRegistry& operator=(const ConnectionRegistry&) = delete;

  // Open connections.
  size_t Count() const { return count_.load(std::memory_order_relaxed); }
  // Closes the connection that has waited longest for its next request (or
  // the rest of one), or for its client to read its answer: a connection
  // whose answer has been written for kStalledWriteMs without being taken
  // counts as waiting, from when the write began. False iff no connection
  // is waiting.
  bool EvictLongestWaiting();
  static constexpr std::int64_t kStalledWriteMs = 1000;

 private:
  friend class Connection;
  void Add(Connection* c);
  void Remove(Connection* c);

  std::mutex mu_;
  std::vector<Connection*> connections_;  // guarded by mu_; index_ is the position
  std::atomic<size_t> count_{0};
};

// An open connection, counted and registered in its registry from
// construction to destruction.
// Thread-safety: the registry calls Share() and Evict() and reads the
// waiting and writing times from any thread; the rest belongs to the
// connection's I/O thread.
class Connection {
 public:
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

 protected:
  // Registers the connection in `registry`, which the connection keeps
  // alive until it is destroyed.
  explicit Connection(std::shared_ptr<ConnectionRegistry> registry);
  virtual ~Connection();
  // Waiting for a request (since now), or answering one. Cheap: a clock
  // read of the coarse clock and a relaxed store.
  void SetWaiting(bool waiting) {
    waiting_since_ms_.store(waiting ? CoarseNowMs() : 0, std::memory_order_relaxed);
  }
  // When SetWaiting(true) was last called (coarse ms; kEvicted, 0 too).
  std::int64_t waiting_since_ms() const {
    return waiting_since_ms_.load(std::memory_order_relaxed);
  }
  // Writing an answer (since now), or done writing it.
  void SetWriting(bool writing) {
    writing_since_ms_.store(writing ? CoarseNowMs() : 0, std::memory_order_relaxed);
  }
  // True iff chosen for eviction while waiting (or writing), and still
  // waiting (writing).
  bool evicted() const {
    return waiting_since_ms_.load(std::memory_order_relaxed) == kEvicted ||
           writing_since_ms_.load(std::memory_order_relaxed) == kEvicted;
  }

 private:
  friend class ConnectionRegistry;
  // A strong reference, or null if the connection is being destroyed.
  virtual std::shared_ptr<Connection> Share() = 0;
  // Closes the connection on its own I/O thread iff it still waits then.
  virtual void Evict() = 0;

  static constexpr std::int64_t kEvicted = -1;
  const std::shared_ptr<ConnectionRegistry> registry_;
  std::atomic<std::int64_t> waiting_since_ms_{0};  // 0: not waiting; kEvicted
  std::atomic<std::int64_t> writing_since_ms_{0};  // 0: not writing; kEvicted
  size_t index_ = 0;                               // in registry_, guarded by its mutex
};

}  // namespace cerulean::server
