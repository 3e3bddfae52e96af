// The memory that response bodies may hold across all connections while
// they are rendered and written. A client that asks for large answers and
// never reads them holds each until the request timeout; without a bound,
// 48 such connections asking for 4 MiB pages hold 185 MiB.
//
// The rules (README, "Memory bounds"):
// - A body of at most kUnbudgetedResponseBytes is not counted: a connection
//   holds one answer at a time, so these are bounded by --maxConnections.
// - A larger body holds its size from the budget while the session writes
//   it, until it is written or the connection goes (ResponseHold). One that
//   does not fit is answered 503 ServerBusy instead (ServerBusyInstead),
//   which clients retry with back-off.
// - A Query Entities page holds its length while it is rendered, through
//   the hold of the connection that asked for it, and ends early, with a
//   continuation, when the budget has no more: under memory pressure pages
//   get shorter before anything is refused.
// Thread-safety: every method may be called from any thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "server/protocol/request.h"

namespace cerulean::server {

// Bodies of at most this size are not counted (see above).
inline constexpr size_t kUnbudgetedResponseBytes = 64 * 1024;

class ResponseBudget {
 public:
  explicit ResponseBudget(size_t capacity) : capacity_(capacity) {}
  ResponseBudget(const ResponseBudget&) = delete;
  ResponseBudget& operator=(const ResponseBudget&) = delete;

  // Takes `bytes` iff they fit; true if taken.
  bool TryTake(size_t bytes);
  // Takes as much of `bytes` as fits now; returns what was taken (0: none).
  size_t TakeUpTo(size_t bytes);
  // Gives back what TryTake or TakeUpTo took.
  void Release(size_t bytes);

  size_t capacity() const { return capacity_; }
  size_t in_use() const { return in_use_.load(); }
  // Held bytes and refusals, as Prometheus gauges and counters (/_metrics).
  std::string RenderMetrics() const;

 private:
  const size_t capacity_;
  std::atomic<size_t> in_use_{0};
  std::atomic<std::uint64_t> refused_{0};  // TryTake calls that failed
};

// What one connection's answer holds from a ResponseBudget: taken as its
// page is rendered (GrowTo, on any thread), settled to the body's size when
// the session takes the answer (SetTo), given back once it is written
// (Clear) or when the hold goes. A connection answers one request at a
// time, so one hold serves all of its requests; whoever touches it next
// runs after the last one did (the request goes to the pool and its answer
// comes back through the I/O thread's queue).
class ResponseHold {
 public:
  explicit ResponseHold(ResponseBudget* budget) : budget_(budget) {}
  ResponseHold(const ResponseHold&) = delete;
  ResponseHold& operator=(const ResponseHold&) = delete;
  ~ResponseHold() { Clear(); }

  // Holds at least `bytes` if the budget allows, taking `ahead` more than
  // needed when it takes; true iff it then holds `bytes`.
  bool GrowTo(size_t bytes, size_t ahead);
  // Holds exactly `bytes`: gives back the surplus, or takes what is
  // missing. False, holding nothing, if that does not fit.
  bool SetTo(size_t bytes);
  void Clear();
  size_t held() const { return held_; }

 private:
  ResponseBudget* const budget_;
  size_t held_ = 0;
};

// The 503 ServerBusy that answers instead of `res` when its body does not
// fit the budget: the same common headers (request id, version, date, CORS),
// the error body in the format `res` was negotiated in (JSON at its metadata
// level, else XML).
HttpResponse ServerBusyInstead(const HttpResponse& res);

}  // namespace cerulean::server
