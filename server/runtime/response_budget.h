// The memory that response bodies may hold across all connections while
// they are rendered and written. A client that asks for large answers and
// never reads them holds each until it is written or its connection goes;
// without a bound, 48 such connections asking for 4 MiB pages hold 185 MiB.
//
// The rules (README, "Memory bounds"):
// - A body of at most kUnbudgetedResponseBytes is not counted: a connection
//   holds one answer at a time, so these are bounded by --maxConnections.
// - A larger body holds its size from the budget while the session writes
//   it, until it is written or the connection goes (ResponseHold). The
//   session writes it at kMinSendBytesPerSecond at least (session.cc), or
//   closes the connection, which gives the hold back.
// - Fair shares: one connection holds at most a quarter of the budget, and
//   so do all the connections of one client (a credential: one SAS, or the
//   account's keys) together. A body that does not fit the budget or a
//   share is answered 503 ServerBusy instead (ServerBusyInstead), which
//   clients retry with back-off.
// - A Query Entities page holds its length while it is rendered, through
//   the hold of the connection that asked for it, and ends early, with a
//   continuation, when the budget or a share has no more: under memory
//   pressure pages get shorter before anything is refused.
// - A write reserves room for its answer before it commits
//   (ReserveForWrite): one that cannot is refused with 503 before anything
//   is written; the answer of a committed write is always sent, taking what
//   its reservation lacked even beyond the capacity (the reservation is a
//   close upper estimate, so that is rare and small).
// Thread-safety: every method of ResponseBudget may be called from any
// thread; a ResponseHold is used by one thread at a time (see below).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "server/protocol/request.h"

namespace cerulean::server {

// Bodies of at most this size are not counted (see above).
inline constexpr size_t kUnbudgetedResponseBytes = 64 * 1024;
// A connection writing a counted body must send at least this many bytes a
// second, after kSendGraceSeconds, or be closed (it then holds nothing).
inline constexpr size_t kMinSendBytesPerSecond = 512 * 1024;
inline constexpr int kSendGraceSeconds = 2;

class ResponseHold;

class ResponseBudget {
 public:
  // Connections and clients get `capacity / shares` each.
  explicit ResponseBudget(size_t capacity, size_t shares = 4)
      : capacity_(capacity), share_(capacity / shares) {}
  ResponseBudget(const ResponseBudget&) = delete;
  ResponseBudget& operator=(const ResponseBudget&) = delete;

  size_t capacity() const { return capacity_; }
  // The most one connection, or one client, may hold.
  size_t share() const { return share_; }
  size_t in_use() const { return in_use_.load(); }
  // Bytes held by `client`'s connections.
  size_t client_held(const std::string& client) const;
  // Held bytes, refusals and the outcomes of reservations for writes, as
  // Prometheus gauges and counters (/_metrics).
  std::string RenderMetrics() const;

 private:
  friend class ResponseHold;
  // Takes for `hold` as much of `bytes` as fits the budget, the hold's
  // share and its client's (`whole`: all of it or nothing); returns what
  // was taken.
  size_t Take(const ResponseHold& hold, size_t bytes, bool whole);
  // Takes `bytes` for `hold` whether or not they fit.
  void Force(const ResponseHold& hold, size_t bytes);
  void Release(const ResponseHold& hold, size_t bytes);

  const size_t capacity_;
  const size_t share_;
  std::atomic<size_t> in_use_{0};  // written under mu_
  mutable std::mutex mu_;
  // What each client's holds hold, for clients that hold something.
  std::unordered_map<std::string, size_t> clients_;  // guarded by mu_
  std::atomic<std::uint64_t> refused_{0};            // answers that did not fit
  std::atomic<std::uint64_t> write_reserved_{0};     // ReserveForWrite that held
  std::atomic<std::uint64_t> write_refused_{0};      // ReserveForWrite that failed
  std::atomic<std::uint64_t> write_overdrawn_{0};    // committed answers over their reservation
};

// What one connection's answer holds from a ResponseBudget: taken as its
// page is rendered (GrowTo, on any thread) or before its write commits
// (ReserveForWrite), settled to the body's size when the session takes the
// answer (SetTo), given back once it is written (Clear) or when the hold
// goes. A connection answers one request at a time, so one hold serves all
// of its requests; whoever touches it next runs after the last one did (the
// request goes to the pool and its answer comes back through the I/O
// thread's queue).
class ResponseHold {
 public:
  explicit ResponseHold(ResponseBudget* budget) : budget_(budget) {}
  ResponseHold(const ResponseHold&) = delete;
  ResponseHold& operator=(const ResponseHold&) = delete;
  ~ResponseHold() { Clear(); }

  // The client whose share the hold counts against from now on (empty: the
  // connection's share only). Gives back what it holds first.
  void SetClient(std::string_view client);
  // Holds at least `bytes` if the budget and the shares allow, taking
  // `ahead` more than needed when it takes; true iff it then holds `bytes`.
  bool GrowTo(size_t bytes, size_t ahead);
  // Holds `bytes` for the answer of a write about to commit, so that the
  // next SetTo cannot fail: true iff it holds them (counted either way).
  bool ReserveForWrite(size_t bytes);
  // Holds exactly `bytes`: gives back the surplus, or takes what is
  // missing. False, holding nothing, if that does not fit, unless a
  // reservation for a write is held: then it takes what is missing anyway.
  bool SetTo(size_t bytes);
  void Clear();
  size_t held() const { return held_; }
  const std::string& client() const { return client_; }

 private:
  ResponseBudget* const budget_;
  std::string client_;
  size_t held_ = 0;
  bool for_write_ = false;  // ReserveForWrite held; SetTo must not fail
};

// The 503 ServerBusy that answers instead of `res` when its body does not
// fit the budget: the same common headers (request id, version, date, CORS),
// the error body in the format `res` was negotiated in (JSON at its metadata
// level, else XML).
HttpResponse ServerBusyInstead(const HttpResponse& res);

}  // namespace cerulean::server
