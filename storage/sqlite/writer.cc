// SqliteStore: the write path. Apply and ApplyAsync queue their ops; the
// committer thread commits what is queued as one transaction (group
// commit) and the syncer thread makes each group durable with one WAL sync
// while the next group is being committed (storage/README.md, "Group commit").
#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <thread>

// After a libc header, which defines __GLIBC__.
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "storage/codec.h"
#include "storage/sqlite/sqlite_internal.h"

namespace cerulean::storage {

int64_t SqliteStore::NextTimestamp() {
  last_timestamp_ = std::max(NowTicks(), last_timestamp_ + 1);
  return last_timestamp_;
}

// Applies, and ops, committed together at most (see CommitLoop). Large
// enough that one sync covers the single inserts of many connections at
// once. The ops bound keeps a group of large batches from growing into one
// very long transaction.
constexpr size_t kMaxGroup = 64;
constexpr size_t kMaxGroupOps = 1024;

Status SqliteStore::ApplyOps(Connection* w, PendingApply* p, GroupTableId* table_id, bool* wrote) {
  const std::string& account = p->account;
  const std::string& table = p->table;
  const std::vector<WriteOp>& ops = p->ops;
  *wrote = false;
  p->timestamps.clear();
  p->timestamps.reserve(ops.size());
  p->failed = 0;
  // The table's id, looked up once per group and table: a lookup is a
  // noticeable part of a single insert's work (scripts/profile.sh insert),
  // and a group's Applies usually address one table.
  int64_t id = 0;
  Status s;
  if (table_id->id != 0 && table_id->account == account && table_id->table == table) {
    id = table_id->id;
  } else {
    s = LookupTable(w, account, table, &id);
    if (!s.ok()) return s;
    table_id->account = account;
    table_id->table = table;
    table_id->id = id;
  }
  // The whole Apply shares one timestamp unless an entity's previous one
  // is not below it (clock stepped back); writes stay strictly increasing
  // per entity either way.
  const int64_t base = NextTimestamp();

  // Phase 1: read every addressed row and decide each op's outcome, so that
  // a refused Apply writes nothing (ops address distinct keys, so no op's
  // write can change another's check). Inserts are the exception: they read
  // nothing (the row must not exist), and find an existing row when they
  // write it (phase 2).
  struct Planned {
    std::string pk, rk;
    bool remove = false;
    int64_t ts = 0;
    std::string props;  // encoded, unless remove
  };
  std::vector<Planned> planned(ops.size());
  std::string props_blob;
  std::vector<Property> props;
  sqlite3_stmt* get_stmt = nullptr;
  sqlite3_stmt* delete_stmt = nullptr;
  sqlite3_stmt* insert_stmt = nullptr;
  sqlite3_stmt* write_stmt = nullptr;
  s = w->Lookup("SELECT ts, props FROM entities WHERE table_id = ?1 AND pk = ?2 AND rk = ?3",
                &get_stmt);
  if (s.ok()) {
    s = w->Lookup("DELETE FROM entities WHERE table_id = ?1 AND pk = ?2 AND rk = ?3", &delete_stmt);
  }
  if (s.ok()) {
    s = w->Lookup("INSERT INTO entities(table_id, pk, rk, ts, props) VALUES (?1, ?2, ?3, ?4, ?5)",
                  &insert_stmt);
  }
  if (s.ok()) {
    s = w->Lookup(
        "INSERT INTO entities(table_id, pk, rk, ts, props) VALUES (?1, ?2, ?3, ?4, ?5) "
        "ON CONFLICT(table_id, pk, rk) DO UPDATE SET ts = excluded.ts, props = excluded.props",
        &write_stmt);
  }
  if (!s.ok()) return s;
  // Reads the row of `plan` into *exists, *prev_ts and props_blob.
  auto read = [&](const Planned& plan, bool* exists, int64_t* prev_ts) -> Status {
    Stmt get;
    w->Use(get_stmt, &get);
    get.BindInt64(1, id);
    get.BindBlobNoCopy(2, plan.pk);
    get.BindBlobNoCopy(3, plan.rk);
    int rc = get.Step();
    *exists = rc == SQLITE_ROW;
    if (*exists) {
      *prev_ts = get.ColumnInt64(0);
      props_blob.assign(get.ColumnBlob(1));
    } else if (rc != SQLITE_DONE) {
      return SqlStatus(w->db, rc, "read entity");
    }
    return Status::Ok();
  };
  // A refusal of op `i` found in phase 1. An insert before it whose row
  // exists comes first, as if every op had been checked in order.
  auto refuse = [&](size_t i, Status refusal) -> Status {
    for (size_t j = 0; j < i; ++j) {
      if (ops[j].kind != WriteKind::kInsert) continue;
      bool exists = false;
      int64_t prev_ts = 0;
      Status r = read(planned[j], &exists, &prev_ts);
      if (!r.ok()) return r;
      if (exists) {
        p->failed = j;
        return Status::AlreadyExists();
      }
    }
    p->failed = i;
    return refusal;
  };
  size_t inserts = 0;
  for (size_t i = 0; i < ops.size(); ++i) {
    const WriteOp& op = ops[i];
    Planned& plan = planned[i];
    p->failed = i;
    const Entity& e = op.entity;
    if (!IsEncodableKey(e.partition_key) || !IsEncodableKey(e.row_key)) {
      return refuse(i, Status::InvalidArgument("InvalidKey"));
    }
    plan.pk = EncodeKey(e.partition_key);
    plan.rk = EncodeKey(e.row_key);

    bool exists = false;
    int64_t prev_ts = 0;
    if (op.kind == WriteKind::kInsert) {
      ++inserts;
    } else {
      s = read(plan, &exists, &prev_ts);
      if (!s.ok()) return s;
    }

    s = PlanWrite(op, exists, prev_ts, props_blob, base, &props, &plan.remove, &plan.ts,
                  &plan.props);
    if (s.code() == StatusCode::kCorruption) return s;
    if (!s.ok()) return refuse(i, s);
  }

  // Phase 2: write. An insert may still be refused (its row exists): the
  // ops before it are then undone, so that a refused Apply leaves the
  // transaction as it found it. When every op is an insert, the rows written
  // before the refused one did not exist, and deleting them undoes them;
  // otherwise a savepoint does. A savepoint costs every Apply a copy of each
  // page it changes (one per entity for a batch spread over a large table),
  // the deletes only a refused one. Any other failure here is SQLite's own
  // (I/O, disk full): the caller abandons the whole transaction.
  p->failed = 0;
  const bool savepoint = inserts > 0 && inserts < ops.size();
  if (savepoint) {
    s = w->Exec("SAVEPOINT apply");
    if (!s.ok()) return s;
  }
  *wrote = true;
  // Counted before any row changes: a failure below only over-counts.
  TableChanges& changes = table_changes_[id];
  changes.writes += 1;
  if (log_keys_) {
    for (const Planned& plan : planned) LogKey(&changes, plan.pk, plan.rk);
  } else {
    changes.logged_from = changes.writes;
  }
  for (size_t i = 0; i < ops.size(); ++i) {
    const Planned& plan = planned[i];
    const bool insert = ops[i].kind == WriteKind::kInsert;
    Stmt stmt;
    if (plan.remove) {
      w->Use(delete_stmt, &stmt);
      stmt.BindInt64(1, id);
      stmt.BindBlobNoCopy(2, plan.pk);
      stmt.BindBlobNoCopy(3, plan.rk);
    } else {
      w->Use(insert ? insert_stmt : write_stmt, &stmt);
      stmt.BindInt64(1, id);
      stmt.BindBlobNoCopy(2, plan.pk);
      stmt.BindBlobNoCopy(3, plan.rk);
      stmt.BindInt64(4, plan.ts);
      stmt.BindBlobNoCopy(5, plan.props);
    }
    int rc = stmt.Step();
    if (insert && rc == SQLITE_CONSTRAINT_PRIMARYKEY) {
      // The statement undid itself; the savepoint, or deleting the rows
      // inserted before it, undoes the ops before it.
      if (savepoint) {
        s = w->Exec("ROLLBACK TO apply");
        if (s.ok()) s = w->Exec("RELEASE apply");
        if (!s.ok()) return s;
      } else {
        for (size_t j = 0; j < i; ++j) {
          Stmt undo;
          w->Use(delete_stmt, &undo);
          undo.BindInt64(1, id);
          undo.BindBlobNoCopy(2, planned[j].pk);
          undo.BindBlobNoCopy(3, planned[j].rk);
          rc = undo.Step();
          if (rc != SQLITE_DONE) return SqlStatus(w->db, rc, "undo insert");
        }
      }
      *wrote = false;
      p->timestamps.clear();
      p->failed = i;
      return Status::AlreadyExists();
    }
    if (rc != SQLITE_DONE) return SqlStatus(w->db, rc, "write entity");
    p->timestamps.push_back(plan.remove ? 0 : plan.ts);
  }
  if (savepoint) {
    s = w->Exec("RELEASE apply");
    if (!s.ok()) return s;
  }
  for (const Planned& plan : planned) {
    if (!plan.remove) last_timestamp_ = std::max(last_timestamp_, plan.ts);
  }
  return Status::Ok();
}

void SqliteStore::CommitGroup(const std::vector<PendingApply*>& group) {
  std::unique_lock<std::mutex> lock = LockWriter(WriterWait::kRequest);
  Connection* w = writer_.get();
  Status s = w->Exec("BEGIN IMMEDIATE");
  if (!s.ok()) {
    for (PendingApply* p : group) p->status = s;
    return;
  }
  // Each Apply checks everything before it writes anything, so a refused
  // one (409, 412, 404, ...) leaves the transaction as it found it and the
  // others commit. A failure while writing is SQLite's (I/O, disk full): the
  // whole group is rolled back and fails with it.
  GroupTableId table_id;
  for (PendingApply* p : group) {
    bool wrote = false;
    p->status = ApplyOps(w, p, &table_id, &wrote);
    if (p->status.ok()) continue;
    // A refusal leaves the transaction open and untouched; anything else
    // (SQLite gave up the transaction, or failed mid-write) loses the group.
    bool abandoned = sqlite3_get_autocommit(w->db) != 0;
    if (!wrote && !abandoned) continue;
    // The failing Apply reports SQLite's error; the others lose their
    // writes with it (refusals stay as they were: they wrote nothing).
    Status lost = p->status;
    w->RollbackIfActive();
    for (PendingApply* q : group) {
      if (q != p && q->status.ok()) {
        q->status = lost;
        q->failed = 0;
      }
    }
    PublishKeyLogFigures();
    return;
  }
  s = w->Commit();
  write_epoch_.fetch_add(1, std::memory_order_release);
  PublishKeyLogFigures();
  if (!s.ok()) {
    for (PendingApply* p : group) {
      if (p->status.ok()) {
        p->status = s;
        p->failed = 0;
      }
    }
  }
}

std::optional<uint64_t> SqliteStore::WriteEpoch() const {
  return write_epoch_.load(std::memory_order_acquire);
}

void SqliteStore::ApplyAsync(std::string account, std::string table, std::vector<WriteOp> ops,
                             ApplyCallback done) {
  auto p = std::make_unique<PendingApply>();
  p->account = std::move(account);
  p->table = std::move(table);
  p->ops = std::move(ops);
  p->done = std::move(done);
  Enqueue(std::move(p));
}

bool SqliteStore::GroupQueued() {
  std::lock_guard<std::mutex> lock(group_mu_);
  return !group_queue_.empty();
}

void SqliteStore::Enqueue(std::unique_ptr<PendingApply> p) {
  const bool large = p->large();
  bool wake;
  {
    std::lock_guard<std::mutex> lock(group_mu_);
    wake = group_queue_.empty();
    group_queue_.push_back(std::move(p));
  }
  // The committer sleeps only on an empty queue.
  if (wake) group_cv_.notify_one();
  // A large Apply gains nothing from waiting for other writes to share its
  // commit, so hand the core to the committer now. Where the server shares
  // one core (taskset, a one-CPU container) a woken committer otherwise
  // waits until the caller's time slice ends before it commits and hands
  // the group to the syncer: the WAL sync would start late instead of
  // overlapping the caller's next request. With more cores the committer
  // runs elsewhere and this returns at once. Small Applies do not yield:
  // concurrent single inserts would then commit one at a time instead of
  // sharing commits (PROFILER=none scripts/profile.sh batch 8 4 shows the
  // gain for batches).
  if (large) std::this_thread::yield();
}

void SqliteStore::CommitLoop() {
  NameThisThread("cerulean-commit");
  std::vector<std::unique_ptr<PendingApply>> group;
  std::vector<PendingApply*> writes;
  std::unique_lock<std::mutex> lock(group_mu_);
  auto ready = [this] { return !group_queue_.empty() || group_stopping_; };
  const bool release_idle_cache = !options_.in_memory && options_.writer_cache_bytes > 0 &&
                                  options_.writer_cache_idle_release.count() > 0;
  for (;;) {
    if (release_idle_cache && writer_cache_warm_) {
      if (!group_cv_.wait_for(lock, options_.writer_cache_idle_release, ready)) {
        writer_cache_warm_ = false;
        lock.unlock();
        ReleaseWriterCache();
        lock.lock();
        continue;
      }
    } else {
      // Other writes (tables, the reaper's chunks) warm the cache too.
      group_cv_.wait(lock, [&] { return ready() || (release_idle_cache && writer_cache_warm_); });
      if (!ready()) continue;
    }
    if (group_queue_.empty()) return;  // stopping, and everything queued is done
    // Woken by the first small write of a burst: let the threads that are
    // reading the rest of it queue them first, so they share this commit and
    // its sync. Where the server has one core (taskset, a one-CPU container)
    // the woken committer otherwise takes the few single inserts already
    // queued and leaves the others for the next commit; with this yield
    // more share each commit and its sync. With nothing else runnable on
    // this core the yield returns at once. Large Applies are asked to start
    // at once (Enqueue) and do not wait.
    if (group_queue_.size() < kMaxGroup && !group_queue_.front()->large()) {
      lock.unlock();
      std::this_thread::yield();
      lock.lock();
    }
    // At most kMaxGroup Applies and about kMaxGroupOps ops at a time: with
    // the sync pipelined, the rest make the next group, committed while
    // this one's sync runs.
    size_t take = 0, ops = 0;
    while (take < group_queue_.size() && take < kMaxGroup && (take == 0 || ops < kMaxGroupOps)) {
      ops += group_queue_[take]->ops.size();
      ++take;
    }
    if (take == group_queue_.size()) {
      group.swap(group_queue_);
    } else {
      auto cut = group_queue_.begin() + static_cast<std::ptrdiff_t>(take);
      group.assign(std::make_move_iterator(group_queue_.begin()), std::make_move_iterator(cut));
      group_queue_.erase(group_queue_.begin(), cut);
    }
    lock.unlock();
    writes.clear();
    for (auto& p : group) {
      if (!p->barrier) writes.push_back(p.get());
    }
    if (Status damaged = Damaged(); !damaged.ok()) {
      for (PendingApply* p : writes) {
        p->status = damaged;
        p->failed = 0;
      }
    } else if (!writes.empty()) {
      CommitGroup(writes);
    }
    if (sync_pipeline_) {
      {
        std::lock_guard<std::mutex> sync_lock(sync_mu_);
        for (auto& p : group) sync_queue_.push_back(std::move(p));
      }
      sync_cv_.notify_one();
    } else {
      RunCallbacks(group);
    }
    group.clear();
    lock.lock();
    writer_cache_warm_ = true;
  }
}

void SqliteStore::WriterCacheUsed() {
  {
    std::lock_guard<std::mutex> lock(group_mu_);
    if (writer_cache_warm_) return;
    writer_cache_warm_ = true;
  }
  group_cv_.notify_one();
}

void SqliteStore::ReleaseWriterCache() {
  {
    std::unique_lock<std::mutex> lock = LockWriter(WriterWait::kRequest);
    int used = 0, high = 0;
    sqlite3_db_status(writer_->db, SQLITE_DBSTATUS_CACHE_USED, &used, &high, 0);
    sqlite3_db_release_memory(writer_->db);
    writer_cache_releases_.fetch_add(1, std::memory_order_relaxed);
    writer_cache_bytes_released_.fetch_add(static_cast<uint64_t>(used), std::memory_order_relaxed);
  }
#ifdef __GLIBC__
  // The pages were allocated one by one among other allocations; glibc
  // returns free memory in the middle of its heaps only when asked.
  malloc_trim(0);
#endif
}

void SqliteStore::SyncLoop() {
  NameThisThread("cerulean-sync");
  // The new WAL's directory entry, before any write needs it. A failure
  // leaves it to the next sync, which then fails the writes waiting on it.
  (void)SyncWalFromSyncer();
  std::vector<std::unique_ptr<PendingApply>> batch;
  std::unique_lock<std::mutex> lock(sync_mu_);
  for (;;) {
    sync_cv_.wait(lock, [this] { return !sync_queue_.empty() || sync_stopping_; });
    if (sync_queue_.empty()) return;  // stopping, and everything handed over is done
    // Small writes: let the committer hand over the group it is committing
    // too, so that one sync covers both: each sync (page writeback, the
    // device flush) is costly, and on one core the syncer would otherwise
    // run more than once per group of single inserts. Not for batches: the
    // core would idle while each waits for the other's commit.
    if (std::none_of(sync_queue_.begin(), sync_queue_.end(),
                     [](const auto& p) { return p->large(); })) {
      lock.unlock();
      std::this_thread::yield();
      lock.lock();
    }
    batch.swap(sync_queue_);
    lock.unlock();
    // One sync covers every commit handed over so far: each was committed
    // before it was handed over, so before this sync began.
    bool committed = false;
    for (const auto& p : batch) committed |= !p->barrier && p->status.ok();
    Status s = committed ? SyncWalFromSyncer() : Status::Ok();
    if (!s.ok()) {
      for (auto& p : batch) {
        if (!p->barrier && p->status.ok()) {
          p->status = s;
          p->failed = 0;
        }
      }
    }
    RunCallbacks(batch);
    batch.clear();
    lock.lock();
  }
}

Status SqliteStore::SyncWal() {
  int rc = wal_file_->pMethods->xSync(wal_file_, kDurableSyncFlags);
  if (rc != SQLITE_OK)
    return Status::IOError("syncing the WAL failed (" + std::to_string(rc) + ")");
  wal_synced_.store(true, std::memory_order_release);
  return Status::Ok();
}

Status SqliteStore::SyncWalFromSyncer() {
  if (wal_synced_.load(std::memory_order_acquire)) return SyncWal();
  // SQLite's unix VFS syncs a new file's directory at its first successful
  // sync and then clears a flag of the file, which the writer's connection
  // reads as it writes: that one sync runs with the writer held.
  std::lock_guard<std::mutex> lock(writer_mu_);
  return SyncWal();
}

void SqliteStore::RunCallbacks(std::vector<std::unique_ptr<PendingApply>>& group) {
  // In queue order, so a Flush barrier's runs after those of every write
  // queued before it. more_in_batch is false on the last write's, so a
  // caller that holds work back until then never waits on a barrier's.
  size_t last_write = 0;
  for (size_t i = 0; i < group.size(); ++i) {
    if (!group[i]->barrier) last_write = i;
  }
  for (size_t i = 0; i < group.size(); ++i) {
    auto& p = group[i];
    ApplyOutcome out;
    out.more_in_batch = i < last_write;
    out.status = p->status;
    out.ops = std::move(p->ops);
    if (p->status.ok()) {
      out.result.timestamps = std::move(p->timestamps);
    } else {
      out.error = ApplyError{p->status, p->failed};
    }
    p->done(std::move(out));
  }
}

namespace {
// Waits for one ApplyAsync callback on the calling thread.
struct OutcomeWaiter {
  std::mutex mu;
  std::condition_variable cv;
  bool finished = false;
  ApplyOutcome outcome;

  ApplyCallback Callback() {
    return [this](ApplyOutcome o) {
      std::lock_guard<std::mutex> lock(mu);
      outcome = std::move(o);
      finished = true;
      cv.notify_one();
    };
  }
  void Wait() {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [this] { return finished; });
  }
};
}  // namespace

Status SqliteStore::Apply(const std::string& account, const std::string& table,
                          const std::vector<WriteOp>& ops, ApplyResult* result, ApplyError* error) {
  OutcomeWaiter waiter;
  ApplyAsync(account, table, ops, waiter.Callback());
  waiter.Wait();
  ApplyOutcome& out = waiter.outcome;
  if (!out.status.ok()) {
    if (error != nullptr) *error = out.error;
    return out.status;
  }
  if (result != nullptr) *result = std::move(out.result);
  return Status::Ok();
}

void SqliteStore::Flush() {
  OutcomeWaiter waiter;
  auto p = std::make_unique<PendingApply>();
  p->barrier = true;
  p->done = waiter.Callback();
  Enqueue(std::move(p));
  waiter.Wait();
}

}  // namespace cerulean::storage
