// PgPool, the connections a PostgresStore shares between threads, and
// PgLease, one of them lent for one operation.
// Thread-safety: PgPool is thread-safe; a PgLease is used by one thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "storage/postgres/pg_connection.h"
#include "storage/postgres/pg_url.h"
#include "storage/status.h"

namespace cerulean::storage {

struct PgPoolOptions {
  PgConnInfo info;
  std::string schema;
  size_t size = 16;
  // How long Acquire waits for a free connection before kBusy.
  std::chrono::milliseconds acquire_timeout{5000};
  std::chrono::milliseconds round_trip_timeout{5000};
  std::chrono::milliseconds long_round_trip_timeout{300000};
};

// Up to `size` connections, opened as threads need them; a broken one is
// dropped when returned, so the next lease opens a fresh one. While the
// database is marked unreachable (SetReachable, by the store's prober)
// Acquire fails at once instead of waiting for a connection attempt.
class PgPool {
 public:
  explicit PgPool(PgPoolOptions options);
  ~PgPool();
  // A connection, waiting up to acquire_timeout while all `size` are in
  // use. kBusy if the database is marked unreachable, if none came free in
  // time, or if none is idle and opening one fails.
  Status Acquire(std::unique_ptr<PgConnection>* out);
  void Release(std::unique_ptr<PgConnection> conn);

  // Opens a connection that is not the pool's (the prober, the schema), to
  // the hosts starting at the one that served last, with round trips of
  // `round_trip` at most; it is not invalidated.
  Status OpenUnpooled(const std::string& schema, std::chrono::milliseconds round_trip,
                      std::unique_ptr<PgConnection>* out);
  // Notes that host `index` of the connection string serves: later
  // connections try it first.
  void NoteServingHost(size_t index);
  // Notes that host `index` stopped answering: if later connections would
  // try it first, they start at the next one instead (which may be the
  // standby being promoted), so that the silent host's connect_timeout is
  // not paid first.
  void NoteSilentHost(size_t index);

  // The prober's verdict: while false, Acquire fails at once.
  void SetReachable(bool reachable);
  bool reachable() const { return reachable_.load(std::memory_order_acquire); }
  // Drops every connection open now: idle ones at once, those in use when
  // they are returned; a round trip in flight on one of them is abandoned
  // within ~100 ms (kBusy).
  void Invalidate();

  // Metrics: connections open and in use, and acquisitions that waited.
  size_t open() const;
  size_t in_use() const;
  uint64_t waits() const;

 private:
  const PgPoolOptions options_;
  std::atomic<bool> reachable_{true};
  std::atomic<uint64_t> generation_{0};
  std::atomic<size_t> first_host_{0};
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<PgConnection>> idle_;  // guarded by mu_
  size_t open_ = 0;                                  // guarded by mu_ (incl. openings under way)
  size_t in_use_ = 0;                                // guarded by mu_
  uint64_t waits_ = 0;                               // guarded by mu_
};

// A pooled connection for one operation; returned to the pool (rolled back
// if a transaction was left open) when the lease ends.
class PgLease {
 public:
  explicit PgLease(PgPool* pool, PgDeadline deadline = PgDeadline::kRequest) : pool_(pool) {
    status_ = pool_->Acquire(&conn_);
    if (conn_) conn_->StartLease(deadline);
  }
  ~PgLease() {
    if (conn_) {
      conn_->RollbackIfActive();
      pool_->Release(std::move(conn_));
    }
  }
  PgLease(const PgLease&) = delete;
  PgLease& operator=(const PgLease&) = delete;
  const Status& status() const { return status_; }
  PgConnection* operator->() const { return conn_.get(); }
  PgConnection* get() const { return conn_.get(); }

 private:
  PgPool* pool_;
  std::unique_ptr<PgConnection> conn_;
  Status status_;
};

}  // namespace cerulean::storage
