// The memory that request bodies may hold across all connections. A
// session reads an admitted request's body (authenticated and authorized
// from its head: router.h) as it takes room for it from this budget: room
// for what has arrived and one more read, doubled at each step, up to the
// announced length (Content-Length, or kMaxBodyBytes for a chunked body),
// so a body holds at most twice what its client has sent. It gives all of
// it back when the request is answered. When the room does not fit, the
// body waits, first come first served, without being read: its connection
// is left unread, so TCP holds the client back (a client that sent
// `Expect: 100-continue` gets its 100 only then). The client must send
// its body at kMinBodyBytesPerSecond at least (after kBodyGraceSeconds),
// not counting the time it waited for the budget, or its connection is
// closed and gives its room back. A request larger than the whole budget
// waits until nothing else holds any, so a maximum-size body always gets
// through on an otherwise idle server.
// Thread-safety: every method may be called from any thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

namespace cerulean::server {

// The room a body takes first, unless it is shorter.
inline constexpr size_t kFirstBodyBytes = 256 * 1024;
// The slowest a body may arrive, after a grace period.
inline constexpr size_t kMinBodyBytesPerSecond = 256 * 1024;
inline constexpr int kBodyGraceSeconds = 5;

class BodyBudget {
 public:
  explicit BodyBudget(size_t capacity) : capacity_(capacity) {}
  BodyBudget(const BodyBudget&) = delete;
  BodyBudget& operator=(const BodyBudget&) = delete;

  // Takes `bytes` if they fit and nobody waits. Returns what was taken (a
  // request larger than the capacity takes the capacity), 0 if nothing.
  // REQUIRES: bytes > 0.
  size_t TryAcquire(size_t bytes);
  // Queues a waiter for `bytes`: once they are taken for it, `granted` is
  // called with what was taken, on the thread that made the room (this one,
  // before Enqueue returns, if they fit now), with no lock held: it hands
  // the grant to where its body is read. Returns the ticket that Cancel
  // takes.
  std::uint64_t Enqueue(size_t bytes, std::function<void(size_t taken)> granted);
  // Removes waiter `ticket`; false if it was granted already (its
  // `granted` has been called or is being called).
  bool Cancel(std::uint64_t ticket);
  // Gives back what TryAcquire or a grant took, and grants waiters that now
  // fit, in order.
  void Release(size_t bytes);

  size_t capacity() const { return capacity_; }
  size_t in_use() const;
  // Held bytes and waiters, as Prometheus gauges (/_metrics).
  std::string RenderMetrics() const;

 private:
  struct Waiter {
    std::uint64_t ticket;
    size_t bytes;
    std::function<void(size_t)> granted;
  };
  size_t Clamp(size_t bytes) const { return bytes < capacity_ ? bytes : capacity_; }
  // Adds `bytes` to in_use_ iff they fit.
  bool Take(size_t bytes);
  // Takes the room of the waiters at the front that fit and removes them;
  // the caller calls their `granted` once mu_ is released. REQUIRES: mu_
  // held.
  std::vector<Waiter> GrantLocked();
  static void Notify(std::vector<Waiter>& granted);

  const size_t capacity_;
  // Taken without the lock while nobody waits: a body costs two atomic
  // operations on the way in and out.
  std::atomic<size_t> in_use_{0};
  std::atomic<size_t> waiting_{0};  // waiters_.size()
  mutable std::mutex mu_;
  std::deque<Waiter> waiters_;     // guarded by mu_
  std::uint64_t next_ticket_ = 1;  // guarded by mu_
  std::uint64_t waits_ = 0;        // guarded by mu_: requests that waited, ever
};

}  // namespace cerulean::server
