// Internal to the PostgresStore implementation (postgres_store.cc,
// postgres_tables.cc, postgres_entities.cc, snapshots.cc, postgres_prober.cc,
// postgres_reaper.cc): pieces they share.
// Thread-safety: as PostgresStore.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "storage/postgres/pg_pool.h"
#include "storage/postgres/postgres_store.h"

namespace cerulean::storage {

// The table lookup of PgLookupTable, plain and locking ($1 account, $2
// ASCII-lower-case name); also sent in pipelines by scans and writes.
inline constexpr std::string_view kLookupTableSql =
    "SELECT id, name FROM cerulean_tables WHERE account = $1 AND name_lower = $2";
inline constexpr std::string_view kLockTableSql =
    "SELECT id, name FROM cerulean_tables WHERE account = $1 AND name_lower = $2 FOR SHARE";

// pg_advisory_lock keys (any constant; chosen to be unlikely elsewhere).
inline constexpr int64_t kSchemaLockKey = 0x6365727531;  // "ceru1"
inline constexpr int64_t kReaperLockKey = 0x6365727532;  // "ceru2"

// Looks the live table up: its id (and name as created, if `name` is set),
// kTableNotFound, or the database's error. `lock` takes a share lock on the
// catalog row, so that a concurrent DeleteTable waits for the writing
// transaction (whose rows it then dooms).
Status PgLookupTable(PgConnection* c, const std::string& account, const std::string& table,
                     int64_t* id, bool lock, std::string* name = nullptr);

// Counts a store call that reached the database, and its latency
// (PostgresStoreStats).
class PostgresStore::Timed {
 public:
  explicit Timed(PostgresStore* store) : store_(store), start_(std::chrono::steady_clock::now()) {}
  ~Timed() {
    auto us = std::chrono::duration_cast<std::chrono::microseconds>(
                  std::chrono::steady_clock::now() - start_)
                  .count();
    store_->operations_.fetch_add(1, std::memory_order_relaxed);
    store_->operation_micros_.fetch_add(static_cast<uint64_t>(us), std::memory_order_relaxed);
  }

 private:
  PostgresStore* store_;
  std::chrono::steady_clock::time_point start_;
};

// Runs `body` (PgConnection*, std::string* sqlstate) -> Status in one
// transaction, again on a retryable failure (serialization, deadlock, a
// lost connection) up to options_.max_retries times. Each round trip waits
// for the database as long as `deadline` says.
template <typename Body>
Status PostgresStore::Transaction(PgDeadline deadline, Body&& body) {
  Timed timed(this);
  for (int attempt = 0;; ++attempt) {
    PgLease c(&pool_, deadline);
    if (!c.status().ok()) return c.status();
    std::string sqlstate;
    Status s = c->Command("BEGIN");
    // The transaction's id and backend, by which a COMMIT that gets no
    // answer is looked after (ResolveLostCommit).
    SentCommit sent;
    if (s.ok() && txid_status_.load(std::memory_order_relaxed)) {
      PgResult r;
      s = c->Exec("SELECT txid_current(), pg_backend_pid()::int8", PgParams(), &r, &sqlstate);
      if (s.ok() && r.rows() == 1) {
        sent.xid = r.Int64(0, 0);
        sent.pid = r.Int64(0, 1);
      }
      sent.host_port = c->HostPort();
    }
    if (s.ok()) s = body(c.get(), &sqlstate);
    if (s.ok()) {
      s = c->Command("COMMIT", &sqlstate);
      if (!s.ok() && c->Broken()) {
        switch (ResolveLostCommit(sent)) {
          case CommitOutcome::kCommitted:
            return Status::Ok();
          case CommitOutcome::kAborted:
            return Status::Busy(s.message() + "; the transaction was rolled back");
          case CommitOutcome::kUnknown:
            return Status::OutcomeUnknown(s.message() + "; whether it committed is not known");
        }
      }
    }
    if (s.ok()) return s;
    c->RollbackIfActive();
    if (!PgRetryable(sqlstate) || attempt >= options_.max_retries) return s;
    retries_.fetch_add(1, std::memory_order_relaxed);
  }
}

}  // namespace cerulean::storage
