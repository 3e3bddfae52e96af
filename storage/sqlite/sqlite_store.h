// SqliteStore: the Store backed by one SQLite database (a file in WAL mode, or
// a private in-memory database). Schema, encodings, the threads and why they
// are as they are: storage/README.md. Its options: sqlite_store_options.h.
// The implementation is split by concern over storage/sqlite/*.cc (the file
// table in the README).
// Thread-safety: every method may be called concurrently from any thread
// (as Store requires). Writes are serialized on one writer connection; file
// stores read through a pool of reader connections that run concurrently
// with the writer; in-memory stores serve everything from one connection
// under a mutex, which a scan hands over between two rows to whoever waits
// for it. The store owns its threads (committer, syncer, checkpointer,
// reaper); the destructor stops and joins them.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "storage/sqlite/sqlite_store_options.h"
#include "storage/sqlite/wal_checkpoint.h"
#include "storage/store.h"

struct sqlite3;
struct sqlite3_file;

namespace cerulean::storage {

// Cumulative work done by a store's statements on all its connections, the
// reaper's included. Counts, not timings, so tests can assert that an
// operation's cost does not depend on the data size.
struct SqliteStoreStats {
  uint64_t statements_prepared = 0;  // prepared-statement cache misses
  uint64_t statements_run = 0;       // statement executions
  uint64_t vm_steps = 0;             // SQLite VM instructions (SQLITE_STMTSTATUS_VM_STEP)
  // File stores (wal_checkpoint.h): checkpoints made by the checkpointer
  // thread (of which, once writes had stopped: checkpoints_idle) and by the
  // writer connection, and WAL rewinds.
  uint64_t checkpoints_background = 0;
  uint64_t checkpoints_idle = 0;
  uint64_t checkpoints_writer = 0;
  uint64_t wal_rewinds = 0;
  // SqliteStoreOptions::wal_truncate_idle_after: how often the WAL file was
  // truncated to zero bytes, and how often a truncation was given up
  // because a reader still read from the WAL or kept part of it from being
  // copied.
  uint64_t wal_truncations = 0;
  uint64_t wal_truncations_refused = 0;
  // SqliteStoreOptions::writer_cache_idle_release: how often the writer's
  // idle page cache was emptied, and the bytes it held then, in all.
  uint64_t writer_cache_releases = 0;
  uint64_t writer_cache_bytes_released = 0;
  // File stores: reader connections open (general and point readers),
  // opened as reads needed them.
  uint64_t readers_open = 0;
  uint64_t point_readers_open = 0;
  // Requests and scans waiting for the writer connection (in memory, the
  // only one) right now, and how often a scan in memory has handed the
  // connection over to them between two rows (ScanRows).
  uint64_t writer_waiters = 0;
  uint64_t scan_handovers = 0;
};

class SqliteStore final : public Store {
 public:
  // Opens (creating if needed) the database described by `options`, brings
  // its schema to the current version and starts the reaper, which resumes
  // reclaiming tables dropped before a restart.
  static Result<std::unique_ptr<SqliteStore>> Open(const SqliteStoreOptions& options);

  ~SqliteStore() override;
  SqliteStore(const SqliteStore&) = delete;
  SqliteStore& operator=(const SqliteStore&) = delete;

  Status CreateTable(const std::string& account, const std::string& table) override;
  Status DeleteTable(const std::string& account, const std::string& table) override;
  Result<std::string> GetTable(const std::string& account, const std::string& table) override;
  Status ScanTables(const std::string& account, const std::string& start,
                    const std::function<bool(const std::string&)>& visit) override;

  // GetTableAcl returns "" for a table whose ACL was never set;
  // GetServiceProperties returns "" for an account whose properties were
  // never set (the caller supplies defaults).
  Result<std::string> GetTableAcl(const std::string& account, const std::string& table) override;
  Status SetTableAcl(const std::string& account, const std::string& table,
                     const std::string& acl) override;
  Result<std::string> GetServiceProperties(const std::string& account) override;
  Status SetServiceProperties(const std::string& account, const std::string& props) override;

  Status GetEntityRow(const std::string& account, const std::string& table,
                      const std::string& partition_key, const std::string& row_key,
                      const RowVisitor& visit) override;
  // The predicate and the visitor run while a connection is held: they must
  // not call back into the store. In memory, a page is read in one snapshot
  // per turn on the connection (storage/README.md, "In memory").
  Status ScanRows(const std::string& account, const std::string& table, const ScanRequest& request,
                  const RowVisitor& visit, std::optional<EntityKey>* next) override;
  using Store::Scan;
  // Besides the Store statuses: kInvalidArgument ("InvalidKey") for a key
  // holding a 0xFE or 0xFF byte (never valid UTF-8). A failure of the final
  // commit reports index 0.
  Status Apply(const std::string& account, const std::string& table,
               const std::vector<WriteOp>& ops, ApplyResult* result, ApplyError* error) override;
  void ApplyAsync(std::string account, std::string table, std::vector<WriteOp> ops,
                  ApplyCallback done) override;
  void Flush() override;

  Status ResetAccount(const std::string& account) override;
  Status SaveSnapshot(const std::string& account, const std::string& name,
                      SnapshotInfo* info) override;
  Status RestoreSnapshot(const std::string& account, const std::string& name,
                         RestoreStats* stats) override;
  Status ListSnapshots(const std::string& account, std::vector<SnapshotInfo>* out) override;
  Status DeleteSnapshot(const std::string& account, const std::string& name) override;
  // False once SQLite reported the database file damaged (SQLITE_CORRUPT,
  // SQLITE_NOTADB) to any of the store's connections: from then on every
  // write is refused with kCorruption and HealthProblem() says why, until
  // the store is reopened. Reads go on (those meeting damage fail).
  bool Healthy() override;
  std::string HealthProblem() override;
  // Checks the database file at `path`, opened read-only, with PRAGMA
  // integrity_check: OK with *problems empty iff it is sound, OK with the
  // problems SQLite lists (at most 100) otherwise; an error if the file
  // cannot be read (absent, in use by a server, not a database).
  static Status CheckFile(const std::string& path, std::vector<std::string>* problems);
  // Called by SqlStatus (sqlite_internal.h) for SQLITE_CORRUPT or
  // SQLITE_NOTADB on `db`: marks the store that has `db`'s database file
  // open as damaged (logged once); nothing if none has.
  static void NoteDamage(sqlite3* db, const std::string& what);
  Status GetUsage(std::vector<AccountUsage>* accounts, uint64_t* bytes) override;
  std::optional<uint64_t> WriteEpoch() const override;
  // The memory held by the snapshot machinery (server/README.md, "Memory
  // bounds"): gauges key_log_memory_bytes/_entries (keys) and
  // write_counts_memory_bytes/_entries (tables), read without waiting for
  // the writer.
  std::vector<StoreGauge> Gauges() const override;
  // The most the key logs of all tables together are counted as holding
  // (the "key_log" gauge); see TableChanges.
  static constexpr size_t kMaxKeyLogBytes = size_t{64} << 20;

  // Work counters so far. Thread-safe; each counter is read atomically, the
  // three together are not a snapshot.
  SqliteStoreStats GetStats() const;

  // Introspection for tests: entity rows stored (live or awaiting reaping),
  // and dropped tables whose rows are not yet fully reclaimed.
  Result<uint64_t> CountEntityRowsForTesting();
  Result<uint64_t> CountPendingReapsForTesting();
  // Reclaims every dropped table now, on the calling thread, in the same
  // chunked transactions the reaper uses.
  Status ReapNowForTesting();
  // True iff the checkpointer has no pass pending or running and is not
  // waiting to make one once writes have stopped: until the next commit it
  // copies nothing more (but what a reader held back, when it truncates the
  // WAL: wal_truncate_idle_after). Always true in memory.
  bool CheckpointerIdleForTesting();

 private:
  struct Connection;    // sqlite3 handle + statement cache (sqlite_internal.h)
  class ReadLease;      // a connection borrowed for reading
  struct TableChanges;  // writes to one table (table_changes_)

  explicit SqliteStore(const SqliteStoreOptions& options);
  Status Init();
  Status InitMemdb();  // the in-memory database's settings (Init)
  // Creates the schema, or brings an older one to the current version, on
  // the writer connection `w` (schema.cc). kCorruption for a newer one.
  Status InitSchema(Connection* w);
  // Opens a read-only connection of the file store with a page cache of
  // `cache_bytes` (0 keeps SQLite's 2 MiB).
  Status OpenReader(int64_t cache_bytes, std::unique_ptr<Connection>* out);
  // GetUsage of an in-memory store (scans.cc): table by table, each counted
  // by a scan of its keys, which hands the one connection over to requests
  // between rows.
  Status GetUsageInMemory(std::vector<AccountUsage>* accounts);
  // Reads the rows of table `id` (`table` of `account`) from `lower` to
  // `upper` in key order with "SELECT <columns> FROM entities ...", whose
  // first two columns are pk and rk, calling on_row(Stmt&, bool* done) for
  // each until it returns a status other than Ok or sets *done. Between two
  // rows, in memory, hands the connection over when `lease` says so and
  // resumes after the last row read (kTableNotFound if the table was dropped
  // meanwhile). REQUIRES: a read transaction open on lease's connection.
  template <typename OnRow>
  Status ReadRange(ReadLease* lease, const std::string& account, const std::string& table,
                   int64_t id, std::string_view columns, std::optional<KeyBound> lower,
                   std::optional<KeyBound> upper, OnRow&& on_row);

  // How a write transaction's commit reaches the disk.
  enum class Sync {
    kDurable,  // per SqliteStoreOptions::fsync_commits
    kLazy,     // never fsync'ed by its own commit (work that can be redone)
  };

  // Runs `body` inside BEGIN IMMEDIATE ... COMMIT on the writer connection;
  // rolls back iff `body` or the commit fails.
  template <typename Body>
  Status WriteTransaction(Body&& body, Sync sync = Sync::kDurable);

  // One Apply waiting in the group-commit queue.
  struct PendingApply;
  // Applies the ops of `p` inside the open write transaction: checks every
  // op first, then writes them all. On a refusal nothing was written and
  // p->failed is the failing op's index; *wrote says whether writing began
  // (a failure after that is SQLite's, and the transaction must be
  // abandoned). `table_id` remembers the last table the group looked up
  // (id 0: none yet), valid for the group's transaction: no Apply creates or
  // drops a table. REQUIRES: writer_mu_ held.
  struct GroupTableId {
    std::string account, table;
    int64_t id = 0;
  };
  Status ApplyOps(Connection* w, PendingApply* p, GroupTableId* table_id, bool* wrote);
  // Commits the Applies of `group` in one transaction (one fsync); a
  // refused Apply writes nothing, so the others commit.
  void CommitGroup(const std::vector<PendingApply*>& group);
  // Queues `p` for the committer.
  void Enqueue(std::unique_ptr<PendingApply> p);
  // True iff writes wait in the group-commit queue.
  bool GroupQueued();
  // The committer thread: takes what is queued (up to kMaxGroup Applies),
  // commits it as one group, hands it to the syncer (or runs the
  // callbacks), repeats.
  void CommitLoop();
  // Empties the writer's page cache (SqliteStoreOptions::
  // writer_cache_idle_release). Takes writer_mu_.
  void ReleaseWriterCache();
  // Tells the committer that the writer connection was used outside its
  // groups (WriteTransaction: tables, the reaper), so that its cache is
  // emptied once idle too. Takes group_mu_.
  void WriterCacheUsed();
  // The syncer thread (durable file stores): makes the WAL durable for
  // every group committed so far with one sync, then runs their callbacks,
  // while the committer already builds the next group. See storage/README.md.
  void SyncLoop();
  // Syncs the WAL through SQLite's VFS (xSync of the writer's WAL file).
  // Safe beside the writer appending to it once one sync has succeeded;
  // REQUIRES before that: writer_mu_ held (SyncWalFromSyncer).
  Status SyncWal();
  // SyncWal from the syncer thread, holding writer_mu_ until a sync has
  // succeeded.
  Status SyncWalFromSyncer();
  // Runs the callbacks of `group` in order.
  static void RunCallbacks(std::vector<std::unique_ptr<PendingApply>>& group);

  // Background WAL checkpoints (file stores): the writer's commits only
  // append to the WAL; this thread copies it back into the database with
  // PASSIVE checkpoints (never blocking readers or the writer) once it has
  // grown past a trigger (wal_checkpoint.h), so few requests wait for one.
  static int OnWalCommit(void* store, sqlite3* db, const char* name, int pages);
  void CheckpointLoop();
  // Once writes have stopped (SqliteStoreOptions::wal_truncate_idle_after):
  // copies what is left of the WAL and truncates it, giving up at once if a
  // reader still reads from it or a commit came meanwhile. True iff the WAL
  // was truncated. REQUIRES: `lock` holds checkpoint_mu_ (released
  // meanwhile, held again on return); called by the checkpointer thread.
  bool TruncateIdleWal(std::unique_lock<std::mutex>& lock);

  void WakeReaper();
  void ReaperLoop();
  // Deletes one chunk of a dropped table's rows. Sets *more iff work may
  // remain.
  Status ReapChunk(bool* more);

  // On a clean close: marks the snapshot tables whose live table is still
  // exactly as recorded (write count unchanged in this incarnation) with
  // live_incarnation -1, which the next Open adopts. A lost mark (crash)
  // only makes the next restore re-copy; a mark is written after every
  // write of the incarnation, so it is never durable while one of them is
  // not.
  void CarryWriteCounts();
  // The writes counted for `table_id`. REQUIRES: writer_mu_ held.
  uint64_t TableWrites(int64_t table_id) const;
  // Logs the key (encoded) written by write number changes->writes; past
  // kMaxKeyLogBytes in all, empties the logs of the tables written least
  // recently (EvictKeyLogs). REQUIRES: writer_mu_ held.
  void LogKey(TableChanges* changes, std::string_view pk, std::string_view rk);
  // Empties the key log of `changes` and frees its memory: a restore to a
  // state before its next write copies the table whole. REQUIRES: writer_mu_
  // held.
  void ClearKeyLog(TableChanges* changes);
  // Empties the logs of the tables other than `keep` logged least recently
  // until the key log holds at most 3/4 of kMaxKeyLogBytes. REQUIRES:
  // writer_mu_ held.
  void EvictKeyLogs(const TableChanges* keep);
  // Forgets the write counts and key logs of the tables doomed by the write
  // transaction that just committed (doomed_in_transaction_): their ids never
  // come back, and a restore copies a dropped table whole. REQUIRES:
  // writer_mu_ held.
  void ForgetDoomedTables();
  // Publishes the totals of the key log and the write counts for Gauges().
  // REQUIRES: writer_mu_ held.
  void PublishKeyLogFigures();
  // Restores one snapshot table (`snapshot_id`, `ord`: `entities` rows) whose
  // rows were saved from or restored into the live table `live_id` at its
  // write count `live_writes`: nothing to do if it was not written since
  // (tables_kept); if every key written since is logged and they are few,
  // puts those rows back as saved and records the count (tables_patched);
  // else sets *done false, and the caller copies the table whole.
  // REQUIRES: writer_mu_ held, inside the restore's transaction.
  Status PatchTable(Connection* w, int64_t snapshot_id, int64_t ord, int64_t live_id,
                    int64_t live_writes, int64_t entities, RestoreStats* stats, bool* done);
  // Sets log_keys_ from whether any snapshot exists, on the writer
  // connection `w` in its open transaction. REQUIRES: writer_mu_ held.
  Status UpdateKeyLogging(Connection* w);

  // Server time for the next write: strictly above every timestamp this
  // store handed out before. REQUIRES: writer_mu_ held.
  int64_t NextTimestamp();

  const SqliteStoreOptions options_;

  // Work counters (SqliteStoreStats), updated by every connection.
  std::atomic<uint64_t> statements_prepared_{0};
  std::atomic<uint64_t> statements_run_{0};
  std::atomic<uint64_t> vm_steps_{0};

  // The writer connection; in memory also the only connection.
  std::mutex writer_mu_;
  std::unique_ptr<Connection> writer_;  // guarded by writer_mu_
  // Who waits for writer_mu_, so that a long holder can let them go first
  // (std::mutex is not fair: a holder that unlocks and locks again usually
  // gets it back). A request (a write; in memory also every read but a
  // bulk scan) or a bulk scan in memory takes it with LockWriter.
  enum class WriterWait { kRequest, kScan };
  std::unique_lock<std::mutex> LockWriter(WriterWait wait);
  // True iff a request or a scan waits in LockWriter: the reaper starts no
  // chunk meanwhile.
  bool WriterWanted() const {
    return (writer_waiters_.load(std::memory_order_relaxed) & kWritersWaitingMask) != 0;
  }
  // writer_waiters_ packs the requests waiting (bits 0-15), the scans
  // waiting (bits 16-31) and how often a waiter has taken writer_mu_ (bits
  // 32-63, wrapping), so that a scan handing the connection over waits on
  // one atomic for a waiter to have taken it (ReadLease::HandOver).
  static constexpr uint64_t kRequestWaiting = 1;
  static constexpr uint64_t kScanWaiting = uint64_t{1} << 16;
  static constexpr uint64_t kRequestsWaitingMask = 0xffff;
  static constexpr uint64_t kWritersWaitingMask = 0xffffffff;
  static constexpr uint64_t kWriterTaken = uint64_t{1} << 32;
  std::atomic<uint64_t> writer_waiters_{0};
  // Scans waiting in HandOver for a waiter to take writer_mu_: LockWriter
  // wakes them.
  std::atomic<int> scans_handing_over_{0};
  std::atomic<uint64_t> scan_handovers_{0};  // SqliteStoreStats::scan_handovers
  int64_t last_timestamp_ = 0;               // guarded by writer_mu_
  // Snapshots: per table id, the Applies that wrote to it since the store
  // opened (absent: none), and while any snapshot exists the keys they
  // wrote, so that a restore can tell which tables are still exactly as
  // saved and which rows of the others changed (storage/README.md,
  // "Snapshots").
  //
  // Memory bounds (server/README.md, "Memory bounds"): one entry per live
  // table written since the store opened (a dropped or reset table's entry
  // is erased when its drop commits, ForgetDoomedTables); a table's key log
  // holds at most kMaxLoggedKeys keys and kMaxLoggedKeyBytes of key bytes
  // (keys may be 1 KiB each: the older half is then dropped and logged_from
  // raised), and all logs together at most kMaxKeyLogBytes as LogBytes()
  // counts them (the logs of the tables written least recently are then
  // emptied). A restore that finds a log too short copies the table whole,
  // so the bounds cost speed, never exactness.
  struct TableChanges {
    uint64_t writes = 0;
    // The keys (encoded) of the writes numbered above `logged_from`, each
    // with its write's number, oldest first.
    uint64_t logged_from = 0;
    struct Key {
      uint64_t write;
      std::string pk, rk;
    };
    std::vector<Key> keys;
    size_t key_bytes = 0;      // of `keys`' pk and rk
    uint64_t last_logged = 0;  // key_log_clock_ at its latest key (EvictKeyLogs)
    // The memory the log is counted as holding: the vector's slots and the
    // keys' bytes (a short key held inside its std::string counts twice).
    size_t LogBytes() const { return keys.capacity() * sizeof(Key) + key_bytes; }
  };
  static constexpr size_t kMaxLoggedKeys = 16384;
  static constexpr size_t kMaxLoggedKeyBytes = size_t{4} << 20;
  std::unordered_map<int64_t, TableChanges> table_changes_;  // guarded by writer_mu_
  // Some snapshot exists: writes log their keys. Guarded by writer_mu_.
  bool log_keys_ = false;
  // The sum of LogBytes() over table_changes_, and of their keys; the clock
  // that orders the logs by their latest key. Guarded by writer_mu_.
  size_t key_log_bytes_ = 0;
  size_t key_log_keys_ = 0;
  uint64_t key_log_clock_ = 0;
  // Tables doomed by the write transaction under way, forgotten once it
  // commits. Guarded by writer_mu_.
  std::vector<int64_t> doomed_in_transaction_;
  // The figures Gauges() reports (PublishKeyLogFigures), readable without
  // writer_mu_.
  std::atomic<uint64_t> key_log_bytes_figure_{0};
  std::atomic<uint64_t> key_log_keys_figure_{0};
  std::atomic<uint64_t> write_counts_bytes_figure_{0};
  std::atomic<uint64_t> write_counts_tables_figure_{0};
  // A random number per Open: write counts are those of one incarnation.
  const uint64_t incarnation_;
  // WriteEpoch(): bumped after each write transaction of the writer
  // connection that changed a row ends (committed or not), never before its
  // commit returned.
  std::atomic<uint64_t> write_epoch_{0};

  // Group commit: Applies queue here; the committer thread commits
  // everything queued so far in one transaction while the next ones queue
  // up behind it.
  std::mutex group_mu_;
  std::condition_variable group_cv_;
  std::vector<std::unique_ptr<PendingApply>> group_queue_;  // guarded by group_mu_
  bool group_stopping_ = false;                             // guarded by group_mu_
  // The writer connection was used (by the committer or a
  // WriteTransaction) since its cache was last emptied.
  bool writer_cache_warm_ = false;  // guarded by group_mu_
  std::atomic<uint64_t> writer_cache_releases_{0};
  std::atomic<uint64_t> writer_cache_bytes_released_{0};
  std::thread committer_;

  // Pipelined durability: the writer connection runs synchronous=NORMAL (a
  // commit only appends to the WAL) and acknowledgements wait for SyncWal.
  bool sync_pipeline_ = false;           // set by Init
  sqlite3_file* wal_file_ = nullptr;     // the writer's WAL file, set by Init
  std::atomic<bool> wal_synced_{false};  // a SyncWal has succeeded
  // kCorruption iff the file was found damaged (writes are then refused).
  Status Damaged() const;
  // The database file, as SQLite names it, while the store is registered
  // for damage reports (NoteDamage); empty in memory.
  std::string damage_file_;
  std::atomic<bool> damaged_{false};
  mutable std::mutex damage_mu_;
  std::string damage_;  // guarded by damage_mu_: the first report
  std::mutex sync_mu_;
  std::condition_variable sync_cv_;
  std::vector<std::unique_ptr<PendingApply>> sync_queue_;  // guarded by sync_mu_
  bool sync_stopping_ = false;                             // guarded by sync_mu_
  std::thread syncer_;

  // Idle reader connections of a file store. Init opens one; ReadLease
  // opens the others (up to reader_pool_size, and point_reader_count point
  // readers) when a read finds none idle, so that start-up opens only what
  // the first reads need.
  mutable std::mutex readers_mu_;
  std::condition_variable readers_cv_;
  std::vector<std::unique_ptr<Connection>> idle_readers_;  // guarded by readers_mu_
  // Idle point readers (SqliteStoreOptions::point_reader_count).
  std::vector<std::unique_ptr<Connection>> idle_point_readers_;  // guarded by readers_mu_
  size_t readers_opened_ = 0;        // guarded by readers_mu_; counts openings under way
  size_t point_readers_opened_ = 0;  // guarded by readers_mu_; likewise
  // An opening failed: no more are tried (reads share those open).
  bool reader_open_failed_ = false;  // guarded by readers_mu_

  // Checkpointer state.
  std::mutex checkpoint_mu_;
  std::condition_variable checkpoint_cv_;
  bool checkpoint_pending_ = false;   // guarded by checkpoint_mu_
  bool checkpoint_stopping_ = false;  // guarded by checkpoint_mu_
  // The WAL generation the pending pass was asked for; the state the
  // planner reads (busy: pending or running).
  int64_t checkpoint_generation_ = 0;  // guarded by checkpoint_mu_
  bool checkpoint_running_ = false;    // guarded by checkpoint_mu_
  // Waiting to copy what the last pass left once no commit comes
  // (CheckpointLoop).
  bool checkpoint_idle_wait_ = false;     // guarded by checkpoint_mu_
  BackgroundCheckpoint checkpoint_last_;  // guarded by checkpoint_mu_ (busy unused)
  // The WAL as the latest commit left it, for the checkpointer's pass once
  // writes stop (CheckpointLoop).
  int checkpoint_wal_pages_ = 0;           // guarded by checkpoint_mu_
  int64_t checkpoint_wal_generation_ = 0;  // guarded by checkpoint_mu_
  uint64_t checkpoint_commits_ = 0;        // guarded by checkpoint_mu_
  // When the latest commit came, and whether the WAL may hold frames (or
  // bytes) since it was last truncated: what the checkpointer's truncation
  // once writes stop waits for (TruncateIdleWal). The WAL a store opens
  // with may hold its schema's writes.
  std::chrono::steady_clock::time_point checkpoint_last_commit_ =
      std::chrono::steady_clock::now();  // guarded by checkpoint_mu_
  bool checkpoint_wal_dirty_ = true;     // guarded by checkpoint_mu_
  // Used by whoever holds the writer connection (OnWalCommit, and
  // TruncateIdleWal with writer_mu_ held).
  WalCheckpointPlanner wal_planner_{options_.wal_checkpoint};
  std::atomic<uint64_t> checkpoints_background_{0};
  std::atomic<uint64_t> checkpoints_idle_{0};
  std::atomic<uint64_t> checkpoints_writer_{0};
  std::atomic<uint64_t> wal_rewinds_{0};
  std::atomic<uint64_t> wal_truncations_{0};
  std::atomic<uint64_t> wal_truncations_refused_{0};
  std::unique_ptr<Connection> checkpointer_conn_;  // used only by checkpointer_
  std::thread checkpointer_;

  // Reaper state.
  std::mutex reap_mu_;
  std::condition_variable reap_cv_;
  bool reap_pending_ = false;  // guarded by reap_mu_
  bool stopping_ = false;      // guarded by reap_mu_
  std::thread reaper_;
};

}  // namespace cerulean::storage
