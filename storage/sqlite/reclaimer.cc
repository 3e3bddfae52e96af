// SqliteStore: reclaiming dropped tables. DeleteTable and ResetAccount only
// move a table's id to doomed_tables; the reaper thread deletes its rows in
// small transactions that yield the writer connection to requests
// (storage/README.md, "Reaping dropped tables").
#include <algorithm>
#include <chrono>

#include "storage/sqlite/sqlite_internal.h"

namespace cerulean::storage {

void SqliteStore::WakeReaper() {
  {
    std::lock_guard<std::mutex> lock(reap_mu_);
    reap_pending_ = true;
  }
  reap_cv_.notify_all();
}

void SqliteStore::ReaperLoop() {
  NameThisThread("cerulean-reap");
  std::unique_lock<std::mutex> lock(reap_mu_);
  while (true) {
    reap_cv_.wait(lock, [this] { return stopping_ || reap_pending_; });
    if (stopping_) return;
    reap_pending_ = false;
    if (reap_cv_.wait_for(lock, options_.reap_delay, [this] { return stopping_; })) return;
    bool more = true;
    Status s;
    while (more && s.ok()) {
      lock.unlock();
      s = ReapChunk(&more);
      lock.lock();
      if (stopping_) return;
      // Between chunks, leave the writer connection to request threads:
      // pause, and start the next chunk only when no write (in memory: no
      // read either) waits for it.
      if (more && s.ok()) {
        do {
          reap_cv_.wait_for(lock, std::chrono::milliseconds(1));
          if (stopping_) return;
        } while (WriterWanted() || GroupQueued());
      }
    }
    if (!s.ok()) {
      // Typically kBusy; try again a little later.
      reap_pending_ = true;
      reap_cv_.wait_for(lock, std::chrono::seconds(1), [this] { return stopping_; });
    }
  }
}

Status SqliteStore::ReapChunk(bool* more) {
  *more = false;
  return WriteTransaction(
      [&](Connection* w) {
        int64_t id = 0;
        {
          Stmt pick;
          Status s = w->Prepare("SELECT table_id FROM doomed_tables LIMIT 1", &pick);
          if (!s.ok()) return s;
          int rc = pick.Step();
          if (rc == SQLITE_DONE) return Status::Ok();
          if (rc != SQLITE_ROW) return SqlStatus(w->db, rc, "pick doomed table");
          id = pick.ColumnInt64(0);
        }
        Stmt chunk;
        Status s = w->Prepare(
            "DELETE FROM entities WHERE table_id = ?1 AND (pk, rk) IN "
            "(SELECT pk, rk FROM entities WHERE table_id = ?1 ORDER BY pk, rk LIMIT ?2)",
            &chunk);
        if (!s.ok()) return s;
        chunk.BindInt64(1, id);
        chunk.BindInt64(2, static_cast<int64_t>(std::max<size_t>(1, options_.reap_chunk_rows)));
        int rc = chunk.Step();
        if (rc != SQLITE_DONE) return SqlStatus(w->db, rc, "reap rows");
        if (static_cast<size_t>(sqlite3_changes64(w->db)) < options_.reap_chunk_rows) {
          Stmt done;
          s = w->Prepare("DELETE FROM doomed_tables WHERE table_id = ?1", &done);
          if (!s.ok()) return s;
          done.BindInt64(1, id);
          rc = done.Step();
          if (rc != SQLITE_DONE) return SqlStatus(w->db, rc, "finish reaping");
        }
        *more = true;
        return Status::Ok();
      },
      Sync::kLazy);  // a lost chunk is simply reaped again
}

Status SqliteStore::ReapNowForTesting() {
  bool more = true;
  Status s;
  while (more && s.ok()) s = ReapChunk(&more);
  return s;
}

Result<uint64_t> SqliteStore::CountEntityRowsForTesting() {
  ReadLease lease(this);
  Stmt stmt;
  Status s = lease.conn()->Prepare("SELECT count(*) FROM entities", &stmt);
  if (!s.ok()) return s;
  int rc = stmt.Step();
  if (rc != SQLITE_ROW) return SqlStatus(lease.conn()->db, rc, "count");
  return static_cast<uint64_t>(stmt.ColumnInt64(0));
}

Result<uint64_t> SqliteStore::CountPendingReapsForTesting() {
  ReadLease lease(this);
  Stmt stmt;
  Status s = lease.conn()->Prepare("SELECT count(*) FROM doomed_tables", &stmt);
  if (!s.ok()) return s;
  int rc = stmt.Step();
  if (rc != SQLITE_ROW) return SqlStatus(lease.conn()->db, rc, "count");
  return static_cast<uint64_t>(stmt.ColumnInt64(0));
}

}  // namespace cerulean::storage
