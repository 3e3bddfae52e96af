// Internal to the SqliteStore implementation (storage/sqlite/*.cc): the
// connection, its statement cache and the helpers every part of the store
// uses to run SQL. Not part of the storage interface.
// Thread-safety: a Connection and a Stmt are used by one thread at a time
// (the store's locks and reader pool guarantee it); ReadLease is taken by
// any thread.
#pragma once

#include <sqlite3.h>

#include <atomic>
#include <cassert>
#include <chrono>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "storage/edm_text.h"
#include "storage/platform.h"
#include "storage/sqlite/sqlite_store.h"
#include "storage/sqlite/wal_vfs.h"
#include "storage/store_ops.h"

namespace cerulean::storage {

// The base VFS of SqliteStoreOptions::exclusive_process. unix-excl keeps the
// WAL index in the heap and takes no file lock per read transaction; SQLite
// has no such VFS for Windows, where its default win32 VFS shares the WAL
// index through a mapping of the -shm file.
#if defined(_WIN32)
inline constexpr const char* kExclusiveVfs = nullptr;
#else
inline constexpr const char* kExclusiveVfs = "unix-excl";
#endif

// The xSync flags of the sync that makes commits durable before they are
// acknowledged (README.md, "Durability on each OS"). On macOS fsync
// leaves the writes in the drive's volatile cache; SQLITE_SYNC_FULL makes
// SQLite's unix VFS call F_FULLFSYNC, which empties it. Elsewhere NORMAL:
// fdatasync on Linux, FlushFileBuffers on Windows (which SQLite's win32 VFS
// calls for every sync).
#if defined(__APPLE__)
inline constexpr int kDurableSyncFlags = SQLITE_SYNC_FULL;
#else
inline constexpr int kDurableSyncFlags = SQLITE_SYNC_NORMAL;
#endif

// The statement that gives a connection a page cache of `bytes` (at least
// 1 KiB; a negative cache_size counts KiB).
std::string CacheSizePragma(int64_t bytes);

// The Status of SQLite result code `rc` from `what` on `db` (may be null):
// kBusy for a lock, kCorruption for a damaged file, else kIOError.
Status SqlStatus(sqlite3* db, int rc, std::string_view what);

// A cached prepared statement in use. Resets the statement and clears its
// bindings when it goes out of scope, so the cache entry is ready for reuse,
// and adds the VM steps it executed to the store's counter. Bind errors are
// remembered and reported by the first Step().
class Stmt {
 public:
  Stmt() = default;
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  ~Stmt() {
    if (stmt_ != nullptr) {
      vm_steps_->fetch_add(
          static_cast<uint64_t>(sqlite3_stmt_status(stmt_, SQLITE_STMTSTATUS_VM_STEP, 1)),
          std::memory_order_relaxed);
      sqlite3_reset(stmt_);
      sqlite3_clear_bindings(stmt_);
    }
  }

  // Takes `stmt` (reset, unbound) for the lifetime of this object; its VM
  // steps are added to `*vm_steps`, which must outlive this object.
  // REQUIRES: no statement attached yet.
  void Attach(sqlite3_stmt* stmt, std::atomic<uint64_t>* vm_steps) {
    assert(stmt_ == nullptr);
    stmt_ = stmt;
    vm_steps_ = vm_steps;
  }

  void BindInt64(int i, int64_t v) { Check(sqlite3_bind_int64(stmt_, i, v)); }
  // Binds a (possibly empty, never NULL) blob; SQLite copies the bytes.
  void BindBlob(int i, std::string_view v) {
    static const char kEmpty = 0;
    Check(
        sqlite3_bind_blob64(stmt_, i, v.empty() ? &kEmpty : v.data(), v.size(), SQLITE_TRANSIENT));
  }
  // As BindBlob without the copy: `v`'s bytes must stay unchanged until
  // this Stmt is destroyed (declare their owner before the Stmt).
  void BindBlobNoCopy(int i, std::string_view v) {
    static const char kEmpty = 0;
    Check(sqlite3_bind_blob64(stmt_, i, v.empty() ? &kEmpty : v.data(), v.size(), SQLITE_STATIC));
  }
  void BindText(int i, std::string_view v) {
    static const char kEmpty = 0;
    Check(sqlite3_bind_text64(stmt_, i, v.empty() ? &kEmpty : v.data(), v.size(), SQLITE_TRANSIENT,
                              SQLITE_UTF8));
  }
  // As BindText without the copy, on BindBlobNoCopy's terms.
  void BindTextNoCopy(int i, std::string_view v) {
    static const char kEmpty = 0;
    Check(sqlite3_bind_text64(stmt_, i, v.empty() ? &kEmpty : v.data(), v.size(), SQLITE_STATIC,
                              SQLITE_UTF8));
  }

  // SQLITE_ROW, SQLITE_DONE or an error code.
  int Step() { return bind_rc_ != SQLITE_OK ? bind_rc_ : sqlite3_step(stmt_); }

  int64_t ColumnInt64(int i) { return sqlite3_column_int64(stmt_, i); }
  // SQLITE_INTEGER, SQLITE_NULL, ...
  int ColumnType(int i) { return sqlite3_column_type(stmt_, i); }
  // The view lives until the next Step() or the end of this Stmt.
  std::string_view ColumnBlob(int i) {
    const void* p = sqlite3_column_blob(stmt_, i);
    int n = sqlite3_column_bytes(stmt_, i);
    return p == nullptr ? std::string_view() : std::string_view(static_cast<const char*>(p), n);
  }
  std::string_view ColumnText(int i) {
    const unsigned char* p = sqlite3_column_text(stmt_, i);
    int n = sqlite3_column_bytes(stmt_, i);
    return p == nullptr ? std::string_view()
                        : std::string_view(reinterpret_cast<const char*>(p), n);
  }

 private:
  void Check(int rc) {
    if (rc != SQLITE_OK && bind_rc_ == SQLITE_OK) bind_rc_ = rc;
  }
  sqlite3_stmt* stmt_ = nullptr;
  std::atomic<uint64_t>* vm_steps_ = nullptr;
  int bind_rc_ = SQLITE_OK;
};

// One sqlite3 connection and its prepared statements, keyed by SQL text.
// Used by one thread at a time (the store's locks and pool guarantee it).
struct SqliteStore::Connection {
  SqliteStore* store = nullptr;  // owner; its counters outlive this
  sqlite3* db = nullptr;
  // Transparent, so that looking a statement up by a literal's view copies
  // nothing.
  struct SqlHash {
    using is_transparent = void;
    size_t operator()(std::string_view sql) const { return std::hash<std::string_view>{}(sql); }
  };
  std::unordered_map<std::string, sqlite3_stmt*, SqlHash, std::equal_to<>> cache;

  ~Connection() {
    for (auto& [sql, stmt] : cache) sqlite3_finalize(stmt);
    if (db != nullptr) sqlite3_close(db);
  }

  // Opens the database of `store` (through the memdb VFS for an in-memory
  // one: a name without a leading '/' is private to its connection).
  static Status Open(SqliteStore* store, const std::string& path,
                     std::unique_ptr<Connection>* out) {
    auto conn = std::make_unique<Connection>();
    conn->store = store;
    const SqliteStoreOptions& options = store->options_;
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
    // unix-excl: the database is this process's alone; its connections
    // share the WAL index in the heap and take no file locks per read
    // transaction (SqliteStoreOptions::exclusive_process).
    const char* vfs = options.in_memory           ? "memdb"
                      : !options.vfs.empty()      ? options.vfs.c_str()
                      : options.exclusive_process ? kExclusiveVfs
                                                  : nullptr;
    // Each WAL transaction written with one pwrite (wal_vfs.h).
    if (!options.in_memory) {
      const char* base = vfs;
      vfs = WalCoalescingVfs(base);
      if (vfs == nullptr) {
        return Status::IOError(std::string("no SQLite VFS named ") + (base ? base : "(default)"));
      }
    }
    int rc = sqlite3_open_v2(path.c_str(), &conn->db, flags, vfs);
    if (rc != SQLITE_OK) return SqlStatus(conn->db, rc, "open " + path);
    sqlite3_extended_result_codes(conn->db, 1);
    sqlite3_busy_timeout(conn->db, static_cast<int>(options.busy_timeout.count()));
#if defined(__APPLE__)
    // SQLite's own syncs (checkpoints, the database file) as F_FULLFSYNC
    // too (kDurableSyncFlags).
    if (!options.in_memory) {
      rc = sqlite3_exec(conn->db, "PRAGMA fullfsync=ON; PRAGMA checkpoint_fullfsync=ON", nullptr,
                        nullptr, nullptr);
      if (rc != SQLITE_OK) return SqlStatus(conn->db, rc, "fullfsync");
    }
#endif
    *out = std::move(conn);
    return Status::Ok();
  }

  // The cached statement for `sql`, prepared on first use.
  Status Prepare(std::string_view sql, Stmt* out) {
    sqlite3_stmt* stmt = nullptr;
    Status s = Lookup(sql, &stmt);
    if (!s.ok()) return s;
    Use(stmt, out);
    return Status::Ok();
  }

  // The cached statement for `sql`, prepared on first use, for Use() (a
  // loop running one statement many times looks it up once).
  Status Lookup(std::string_view sql, sqlite3_stmt** out) {
    auto it = cache.find(sql);
    if (it == cache.end()) {
      sqlite3_stmt* stmt = nullptr;
      int rc = sqlite3_prepare_v3(db, sql.data(), static_cast<int>(sql.size()),
                                  SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
      if (rc != SQLITE_OK) return SqlStatus(db, rc, "prepare");
      it = cache.emplace(sql, stmt).first;
      store->statements_prepared_.fetch_add(1, std::memory_order_relaxed);
    }
    *out = it->second;
    return Status::Ok();
  }

  // Attaches `stmt` (from Lookup) to `*out` for one run.
  void Use(sqlite3_stmt* stmt, Stmt* out) {
    // A statement is never used twice at once on one connection.
    assert(!sqlite3_stmt_busy(stmt));
    store->statements_run_.fetch_add(1, std::memory_order_relaxed);
    out->Attach(stmt, &store->vm_steps_);
  }

  // Runs `sql` to completion, ignoring rows.
  Status Exec(const std::string& sql) {
    Stmt stmt;
    Status s = Prepare(sql, &stmt);
    if (!s.ok()) return s;
    int rc;
    while ((rc = stmt.Step()) == SQLITE_ROW) {
    }
    return rc == SQLITE_DONE ? Status::Ok() : SqlStatus(db, rc, sql);
  }

  // Ends the open transaction, if any, discarding its changes.
  void RollbackIfActive() {
    if (!sqlite3_get_autocommit(db)) static_cast<void>(Exec("ROLLBACK"));
  }

  // Commits the open transaction; rolls it back if the commit fails.
  Status Commit() {
    Status s = Exec("COMMIT");
    if (!s.ok()) RollbackIfActive();
    return s;
  }
};

// A connection borrowed for reading: a pooled reader of a file store (for
// a point read or a short page, a point reader when one is idle), or the
// single connection of an in-memory store (holding the writer mutex).
// Defined in readers.cc.
class SqliteStore::ReadLease {
 public:
  // kPoint: GetEntityRow; kShortScan: a scan with ScanRequest::point_reader;
  // kScan: any other scan; kAny: anything else. In memory, a kScan waits
  // for the connection as a scan, everything else as a request
  // (LockWriter).
  enum Kind { kAny, kPoint, kShortScan, kScan };

  // In memory, the turns of a scan on the connection (ShouldHandOver): once
  // it has handed the connection over, it keeps it for at least kMinTurn
  // before it lets requests go first again, so that a stream of requests
  // cannot stop it; it keeps it for at most kScanTurn while only other
  // scans wait (so that scans take turns), or while anyone waits if it is a
  // short page (kShortScan: it is expected to end sooner, like a point read).
  static constexpr std::chrono::microseconds kMinTurn{100};
  static constexpr std::chrono::microseconds kScanTurn{2000};

  explicit ReadLease(SqliteStore* store, Kind kind = kAny);
  ~ReadLease();

  ReadLease(const ReadLease&) = delete;
  ReadLease& operator=(const ReadLease&) = delete;

  Connection* conn() const { return conn_; }

  // In memory: true iff this lease should let those waiting for the
  // connection go first now (the turns above); a scan then hands it over
  // between two rows (HandOver). Always false on a file store, whose
  // readers wait for no one.
  bool ShouldHandOver() const {
    if (!writer_lock_.owns_lock()) return false;
    const uint64_t waiting = store_->writer_waiters_.load(std::memory_order_relaxed);
    if ((waiting & kWritersWaitingMask) == 0) return false;
    const bool requests = (waiting & kRequestsWaitingMask) != 0 && wait_ == WriterWait::kScan;
    if (requests && !handed_over_) return true;
    return std::chrono::steady_clock::now() - turn_start_ >= (requests ? kMinTurn : kScanTurn);
  }
  // In memory: ends the read transaction, lets the requests and scans
  // waiting for the connection take it first, and takes it back (in a new
  // turn, with no transaction open). REQUIRES: no statement of this lease's
  // running; ShouldHandOver() returned true.
  void HandOver();

 private:
  // Opens one more reader into reader_ with the lock released, counted in
  // *opened; on failure reader_ stays null and no later lease tries again.
  void OpenNew(std::unique_lock<std::mutex>& lock, size_t* opened, int64_t cache_bytes);

  SqliteStore* store_;
  Connection* conn_ = nullptr;
  std::unique_ptr<Connection> reader_;
  bool point_ = false;  // reader_ is a point reader
  // In memory: the writer mutex, held as a request or a scan since
  // turn_start_ (set for scans only).
  std::unique_lock<std::mutex> writer_lock_;
  WriterWait wait_ = WriterWait::kRequest;
  std::chrono::steady_clock::time_point turn_start_;
  bool handed_over_ = false;
};

inline std::unique_lock<std::mutex> SqliteStore::LockWriter(WriterWait wait) {
  const uint64_t waiting = wait == WriterWait::kScan ? kScanWaiting : kRequestWaiting;
  writer_waiters_.fetch_add(waiting);
  std::unique_lock<std::mutex> lock(writer_mu_);
  // One waiter fewer, one more taking: the word changes, which is what a
  // scan in ReadLease::HandOver waits for.
  writer_waiters_.fetch_add(kWriterTaken - waiting);
  if (scans_handing_over_.load() > 0) writer_waiters_.notify_all();
  return lock;
}

// The live table `table` of `account` (case-insensitive): its id and, if
// `name` is set, its name as created. kTableNotFound if absent.
template <typename Conn>
Status LookupTable(Conn* c, const std::string& account, const std::string& table, int64_t* id,
                   std::string* name = nullptr) {
  Stmt stmt;
  Status s =
      c->Prepare("SELECT id, name FROM tables WHERE account = ?1 AND name_lower = ?2", &stmt);
  if (!s.ok()) return s;
  stmt.BindText(1, account);
  stmt.BindText(2, LowerAscii(table));
  int rc = stmt.Step();
  if (rc == SQLITE_DONE) return Status::TableNotFound(table);
  if (rc != SQLITE_ROW) return SqlStatus(c->db, rc, "lookup table");
  *id = stmt.ColumnInt64(0);
  if (name != nullptr) *name = std::string(stmt.ColumnText(1));
  return Status::Ok();
}

// Runs `stmt` to completion.
inline Status RunToDone(sqlite3* db, Stmt& stmt, std::string_view what) {
  int rc;
  while ((rc = stmt.Step()) == SQLITE_ROW) {
  }
  return rc == SQLITE_DONE ? Status::Ok() : SqlStatus(db, rc, what);
}

// A blob argument of Execute and Query (a std::string_view binds text).
struct Blob {
  std::string_view bytes;
};

inline void BindArg(Stmt& stmt, int i, int64_t v) { stmt.BindInt64(i, v); }
inline void BindArg(Stmt& stmt, int i, std::string_view v) { stmt.BindText(i, v); }
inline void BindArg(Stmt& stmt, int i, Blob v) { stmt.BindBlob(i, v.bytes); }

// Runs `sql` with `args` (int64_t, or text) bound to ?1, ?2, ... to
// completion.
template <typename Conn, typename... Args>
Status Execute(Conn* c, std::string_view sql, const Args&... args) {
  Stmt stmt;
  Status s = c->Prepare(sql, &stmt);
  if (!s.ok()) return s;
  int i = 0;
  (BindArg(stmt, ++i, args), ...);
  return RunToDone(c->db, stmt, sql);
}

// Runs `sql` with `args` bound and calls `row(stmt)` for each row.
template <typename Conn, typename Row, typename... Args>
Status Query(Conn* c, std::string_view sql, const Row& row, const Args&... args) {
  Stmt stmt;
  Status s = c->Prepare(sql, &stmt);
  if (!s.ok()) return s;
  int i = 0;
  (BindArg(stmt, ++i, args), ...);
  int rc;
  while ((rc = stmt.Step()) == SQLITE_ROW) row(stmt);
  return rc == SQLITE_DONE ? Status::Ok() : SqlStatus(c->db, rc, sql);
}

// An Apply of at least this many ops has the committer start at once
// (Enqueue).
constexpr size_t kLargeApplyOps = 32;

// Defined here: the destructor (sqlite_store.cc) destroys the queues.
struct SqliteStore::PendingApply {
  // A batch-sized Apply: it starts a commit at once instead of waiting for
  // others to share it (Enqueue, CommitLoop, SyncLoop).
  bool large() const { return ops.size() >= kLargeApplyOps; }

  std::string account;
  std::string table;
  std::vector<WriteOp> ops;
  ApplyCallback done;
  // A Flush marker: no ops, only a callback to run in queue order.
  bool barrier = false;
  std::vector<int64_t> timestamps;
  size_t failed = 0;
  Status status;
};

// Defined here: tables.cc, reclaimer.cc and snapshots.cc instantiate it.
template <typename Body>
Status SqliteStore::WriteTransaction(Body&& body, Sync sync) {
  if (Status damaged = Damaged(); !damaged.ok()) return damaged;
  // Lazy transactions are the reaper's own; everyone else goes first.
  std::unique_lock<std::mutex> lock = sync == Sync::kLazy ? std::unique_lock<std::mutex>(writer_mu_)
                                                          : LockWriter(WriterWait::kRequest);
  Connection* w = writer_.get();
  const sqlite3_int64 changes_before = sqlite3_total_changes64(w->db);
  Status s = w->Exec("BEGIN IMMEDIATE");
  if (s.ok()) s = body(w);
  if (s.ok()) {
    s = w->Commit();
  } else {
    w->RollbackIfActive();
  }
  // Tables the body doomed are gone iff it committed.
  if (s.ok()) {
    ForgetDoomedTables();
  } else {
    doomed_in_transaction_.clear();
  }
  PublishKeyLogFigures();
  // A transaction that changed no row (the reaper's look for a dropped table when there is
  // none, as at every start) leaves every read as it was: pages rendered ahead stay current.
  if (sqlite3_total_changes64(w->db) != changes_before) {
    write_epoch_.fetch_add(1, std::memory_order_release);
  }
  // A lazy commit is never synced on its own: the next durable sync covers
  // its frames too, and WAL frames are replayed in order, so it can be lost
  // only together with everything after it.
  if (s.ok() && sync == Sync::kDurable && sync_pipeline_) s = SyncWal();
  lock.unlock();
  WriterCacheUsed();
  return s;
}

}  // namespace cerulean::storage
