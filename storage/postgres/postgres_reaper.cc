// PostgresStore's reaper: the thread that deletes the rows of dropped tables
// (cerulean_doomed_tables) in short chunks, one node at a time where the
// database has advisory locks. See postgres_store.h.
#include <mutex>

#include "storage/platform.h"
#include "storage/postgres/postgres_internal.h"
#include "storage/postgres/postgres_store.h"

namespace cerulean::storage {

void PostgresStore::WakeReaper() {
  {
    std::lock_guard<std::mutex> lock(reap_mu_);
    reap_pending_ = true;
  }
  reap_cv_.notify_all();
}

void PostgresStore::ReaperLoop() {
  NameThisThread("cerulean-reap");
  std::unique_lock<std::mutex> lock(reap_mu_);
  while (true) {
    // Woken by this node's drops, and now and then for other nodes' (or
    // for work a failed pass left).
    reap_cv_.wait_for(lock, options_.reap_poll, [this] { return stopping_ || reap_pending_; });
    if (stopping_) return;
    reap_pending_ = false;
    lock.unlock();
    static_cast<void>(ReapAll());
    lock.lock();
  }
}

Status PostgresStore::ReapAll() {
  PgLease c(&pool_, PgDeadline::kLong);
  if (!c.status().ok()) return c.status();
  PgResult r;
  if (advisory_locks_) {
    // A session lock: held across the chunks' own transactions, and freed
    // by the database if this node dies.
    Status s = c->Exec("SELECT pg_try_advisory_lock($1)", PgParams().Int64(kReaperLockKey), &r);
    if (!s.ok()) return s;
    if (!r.Bool(0, 0)) return Status::Ok();  // another node is reaping
  }
  Status s;
  while (true) {
    {
      std::lock_guard<std::mutex> lock(reap_mu_);
      if (stopping_) break;
    }
    s = c->Exec("SELECT table_id FROM cerulean_doomed_tables LIMIT 1", PgParams(), &r);
    if (!s.ok() || r.rows() == 0) break;
    const int64_t id = r.Int64(0, 0);
    // One short statement (its own transaction) per chunk, so request
    // writers never wait long behind the reaper.
    s = c->Exec(
        "DELETE FROM cerulean_entities WHERE (table_id, pk, rk) IN (SELECT table_id, pk, rk FROM "
        "cerulean_entities WHERE table_id = $1 LIMIT $2)",
        PgParams().Int64(id).Int64(static_cast<int64_t>(options_.reap_chunk_rows)), &r);
    if (!s.ok()) break;
    if (static_cast<size_t>(r.Affected()) < options_.reap_chunk_rows) {
      s = c->Exec("DELETE FROM cerulean_doomed_tables WHERE table_id = $1", PgParams().Int64(id));
      if (!s.ok()) break;
    }
  }
  if (advisory_locks_ && !c->Broken()) {
    static_cast<void>(
        c->Exec("SELECT pg_advisory_unlock($1)", PgParams().Int64(kReaperLockKey), &r));
  }
  return s;
}

Status PostgresStore::ReapNowForTesting() { return ReapAll(); }

Result<uint64_t> PostgresStore::CountEntityRowsForTesting() {
  PgLease c(&pool_);
  if (!c.status().ok()) return c.status();
  PgResult r;
  Status s = c->Exec("SELECT count(*) FROM cerulean_entities", PgParams(), &r);
  if (!s.ok()) return s;
  return static_cast<uint64_t>(r.Int64(0, 0));
}

Result<uint64_t> PostgresStore::CountPendingReapsForTesting() {
  PgLease c(&pool_);
  if (!c.status().ok()) return c.status();
  PgResult r;
  Status s = c->Exec("SELECT count(*) FROM cerulean_doomed_tables", PgParams(), &r);
  if (!s.ok()) return s;
  return static_cast<uint64_t>(r.Int64(0, 0));
}

}  // namespace cerulean::storage
