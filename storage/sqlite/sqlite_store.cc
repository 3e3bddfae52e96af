#include "storage/sqlite/sqlite_store.h"

#include <pthread.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <sched.h>
#include <sqlite3.h>

#include <algorithm>
#include <cassert>
#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <utility>

#include "storage/codec.h"
#include "storage/edm_text.h"
#include "storage/store_ops.h"
#include "storage/sqlite/wal_vfs.h"

namespace cerulean::storage {

namespace {

// Names the calling thread (15 characters at most) for top, perf and
// /proc/PID/task/*/comm.
void NameThisThread(const char* name) { pthread_setname_np(pthread_self(), name); }

// The statement that gives a connection a page cache of `bytes` (at least
// 1 KiB; a negative cache_size counts KiB).
std::string CacheSizePragma(int64_t bytes) {
  return "PRAGMA cache_size=-" + std::to_string(std::max<int64_t>(1, bytes >> 10));
}

// PRAGMA user_version of the schema below. persistent: never renumber; a
// schema change adds a version and a migration step in Init().
constexpr int kSchemaVersion = 2;

// persistent: the on-disk schema of version 1 (storage/README.md).
constexpr const char* kSchemaV1[] = {
    // The catalog of live tables. AUTOINCREMENT guarantees an id is never
    // handed out twice, so rows of a dropped table that still await reaping
    // can never reappear under a new table of the same name.
    "CREATE TABLE tables("
    "  id INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  account TEXT NOT NULL,"
    "  name TEXT NOT NULL,"        // as created
    "  name_lower TEXT NOT NULL,"  // ASCII-lower-cased, for lookup
    "  name_key BLOB NOT NULL,"    // EncodeKey(name), for ordinal order
    "  acl TEXT NOT NULL DEFAULT '')",
    "CREATE UNIQUE INDEX tables_by_lower_name ON tables(account, name_lower)",
    "CREATE INDEX tables_by_name_key ON tables(account, name_key)",
    // Entities of every table, clustered by key so a key range is one index
    // range scan. pk and rk are EncodeKey() blobs, props an
    // EncodeProperties() blob, ts DateTime ticks.
    "CREATE TABLE entities("
    "  table_id INTEGER NOT NULL,"
    "  pk BLOB NOT NULL,"
    "  rk BLOB NOT NULL,"
    "  ts INTEGER NOT NULL,"
    "  props BLOB NOT NULL,"
    "  PRIMARY KEY(table_id, pk, rk)) WITHOUT ROWID",
    // Per-account documents.
    "CREATE TABLE accounts("
    "  account TEXT PRIMARY KEY,"
    "  service_properties TEXT NOT NULL) WITHOUT ROWID",
    // Ids of dropped tables whose entity rows are not yet all deleted.
    "CREATE TABLE doomed_tables(table_id INTEGER PRIMARY KEY)",
};

// persistent: added by version 2, snapshots (storage/README.md).
constexpr const char* kSchemaV2[] = {
    "CREATE TABLE snapshots("
    "  id INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  account TEXT NOT NULL,"
    "  name TEXT NOT NULL,"
    "  created INTEGER NOT NULL,"  // DateTime ticks
    "  service_properties TEXT)",  // NULL: the account had none
    "CREATE UNIQUE INDEX snapshots_by_name ON snapshots(account, name)",
    // One row per table saved; ord numbers the tables of a snapshot.
    // (live_id, live_writes, live_incarnation): the live table that still
    // holds exactly the saved rows while its write count is live_writes in
    // the store incarnation live_incarnation (SqliteStore::table_changes_).
    "CREATE TABLE snapshot_tables("
    "  snapshot_id INTEGER NOT NULL,"
    "  ord INTEGER NOT NULL,"
    "  name TEXT NOT NULL,"
    "  acl TEXT NOT NULL,"
    "  entities INTEGER NOT NULL,"
    "  live_id INTEGER NOT NULL,"
    "  live_writes INTEGER NOT NULL,"
    "  live_incarnation INTEGER NOT NULL,"
    "  PRIMARY KEY(snapshot_id, ord)) WITHOUT ROWID",
    "CREATE TABLE snapshot_entities("
    "  snapshot_id INTEGER NOT NULL,"
    "  ord INTEGER NOT NULL,"
    "  pk BLOB NOT NULL,"
    "  rk BLOB NOT NULL,"
    "  ts INTEGER NOT NULL,"
    "  props BLOB NOT NULL,"
    "  PRIMARY KEY(snapshot_id, ord, pk, rk)) WITHOUT ROWID",
};

Status SqlStatus(sqlite3* db, int rc, std::string_view what) {
  std::string msg(what);
  msg += ": ";
  msg += sqlite3_errstr(rc);
  if (db != nullptr && sqlite3_errcode(db) == rc) {
    msg += " (";
    msg += sqlite3_errmsg(db);
    msg += ")";
  }
  switch (rc & 0xFF) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return Status::Busy(std::move(msg));
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return Status::Corruption(std::move(msg));
    default:
      return Status::IOError(std::move(msg));
  }
}

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

}  // namespace

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
                      : options.exclusive_process ? "unix-excl"
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
// a point read, a point reader when one is idle), or the single connection of
// an in-memory store (holding the writer mutex).
class SqliteStore::ReadLease {
 public:
  enum Kind { kAny, kPoint };

  explicit ReadLease(SqliteStore* store, Kind kind = kAny) : store_(store) {
    if (store_->options_.in_memory) {
      writer_lock_ = std::unique_lock<std::mutex>(store_->writer_mu_);
      conn_ = store_->writer_.get();
      return;
    }
    const SqliteStoreOptions& options = store_->options_;
    std::unique_lock<std::mutex> lock(store_->readers_mu_);
    if (kind == kPoint) {
      if (!store_->idle_point_readers_.empty()) {
        reader_ = std::move(store_->idle_point_readers_.back());
        store_->idle_point_readers_.pop_back();
      } else if (store_->point_readers_opened_ < options.point_reader_count) {
        OpenNew(lock, &store_->point_readers_opened_,
                std::max<int64_t>(1, options.point_reader_cache_bytes));
      }
      point_ = reader_ != nullptr;
    }
    if (reader_ == nullptr && store_->idle_readers_.empty() &&
        store_->readers_opened_ < std::max<size_t>(1, options.reader_pool_size)) {
      OpenNew(lock, &store_->readers_opened_, 0);
    }
    if (reader_ == nullptr) {
      // Init opened one, so one comes back.
      store_->readers_cv_.wait(lock, [this] { return !store_->idle_readers_.empty(); });
      reader_ = std::move(store_->idle_readers_.back());
      store_->idle_readers_.pop_back();
    }
    conn_ = reader_.get();
  }

  ~ReadLease() {
    conn_->RollbackIfActive();
    if (reader_ == nullptr) return;
    {
      std::lock_guard<std::mutex> lock(store_->readers_mu_);
      (point_ ? store_->idle_point_readers_ : store_->idle_readers_).push_back(std::move(reader_));
    }
    // No one waits for a point reader.
    if (!point_) store_->readers_cv_.notify_one();
  }

  ReadLease(const ReadLease&) = delete;
  ReadLease& operator=(const ReadLease&) = delete;

  Connection* conn() const { return conn_; }

 private:
  // Opens one more reader into reader_ with the lock released, counted in
  // *opened; on failure reader_ stays null and no later lease tries again.
  void OpenNew(std::unique_lock<std::mutex>& lock, size_t* opened, int64_t cache_bytes) {
    if (store_->reader_open_failed_) return;
    ++*opened;
    lock.unlock();
    std::unique_ptr<Connection> reader;
    const bool ok = store_->OpenReader(cache_bytes, &reader).ok();
    lock.lock();
    if (ok) {
      reader_ = std::move(reader);
    } else {
      --*opened;
      store_->reader_open_failed_ = true;
    }
  }

  SqliteStore* store_;
  Connection* conn_ = nullptr;
  std::unique_ptr<Connection> reader_;
  bool point_ = false;  // reader_ is a point reader
  std::unique_lock<std::mutex> writer_lock_;
};

namespace {

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
Status RunToDone(sqlite3* db, Stmt& stmt, std::string_view what) {
  int rc;
  while ((rc = stmt.Step()) == SQLITE_ROW) {
  }
  return rc == SQLITE_DONE ? Status::Ok() : SqlStatus(db, rc, what);
}

// A blob argument of Execute and Query (a std::string_view binds text).
struct Blob {
  std::string_view bytes;
};

void BindArg(Stmt& stmt, int i, int64_t v) { stmt.BindInt64(i, v); }
void BindArg(Stmt& stmt, int i, std::string_view v) { stmt.BindText(i, v); }
void BindArg(Stmt& stmt, int i, Blob v) { stmt.BindBlob(i, v.bytes); }

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

// Decodes a stored row into `*entity`.
Status DecodeRow(std::string_view pk, std::string_view rk, int64_t ts, std::string_view props,
                 Entity* entity) {
  Status s = DecodeKeyInto(pk, &entity->partition_key);
  if (s.ok()) s = DecodeKeyInto(rk, &entity->row_key);
  if (!s.ok()) return s;
  entity->timestamp = ts;
  return DecodeProperties(props, &entity->properties);
}

// SQL condition for one bound; parameters ?first (pk) and ?first+1 (rk).
std::string BoundSql(const KeyBound& b, bool lower, int first) {
  std::string op = lower ? (b.inclusive ? ">=" : ">") : (b.inclusive ? "<=" : "<");
  std::string p = "?" + std::to_string(first);
  if (!b.row_key) return " AND pk " + op + " " + p;
  return " AND (pk, rk) " + op + " (" + p + ", ?" + std::to_string(first + 1) + ")";
}

void BindBound(Stmt* stmt, const KeyBound& b, int first) {
  stmt->BindBlob(first, EncodeKey(b.partition_key));
  if (b.row_key) stmt->BindBlob(first + 1, EncodeKey(*b.row_key));
}

// The key conditions of a scan from `lower` to `upper` (either may be
// absent), appended to `*sql` and bound by BindRange: ?2/?3 the lower
// bound's keys, ?4/?5 the upper's. Bounds within one partition are written
// as "pk = ?2 AND rk ..." so that SQLite seeks to the lower row key and
// stops at the upper one; row values "(pk, rk) >= (?, ?)" were re-checked on
// every row (20 VDBE opcodes per row instead of 7 for a RowKey range).
void AppendRangeSql(const std::optional<KeyBound>& lower, const std::optional<KeyBound>& upper,
                    std::string* sql) {
  if (SinglePartition(lower, upper)) {
    *sql += " AND pk = ?2";
    if (lower->row_key) *sql += lower->inclusive ? " AND rk >= ?3" : " AND rk > ?3";
    if (upper->row_key) *sql += upper->inclusive ? " AND rk <= ?5" : " AND rk < ?5";
    return;
  }
  if (lower) *sql += BoundSql(*lower, /*lower=*/true, 2);
  if (upper) *sql += BoundSql(*upper, /*lower=*/false, 4);
}

void BindRange(Stmt* stmt, const std::optional<KeyBound>& lower,
               const std::optional<KeyBound>& upper) {
  if (SinglePartition(lower, upper)) {
    stmt->BindBlob(2, EncodeKey(lower->partition_key));
    if (lower->row_key) stmt->BindBlob(3, EncodeKey(*lower->row_key));
    if (upper->row_key) stmt->BindBlob(5, EncodeKey(*upper->row_key));
    return;
  }
  if (lower) BindBound(stmt, *lower, 2);
  if (upper) BindBound(stmt, *upper, 4);
}

}  // namespace

SqliteStore::SqliteStore(const SqliteStoreOptions& options)
    : options_(options),
      // Stored as an SQLite INTEGER: 63 bits.
      incarnation_(((static_cast<uint64_t>(std::random_device{}()) << 32) ^
                    static_cast<uint64_t>(NowTicks())) &
                   0x7fffffffffffffff) {}

namespace {
// Sets `*stopping` under `mu`, wakes `cv`'s waiters and joins `thread`.
void StopThread(std::mutex& mu, std::condition_variable& cv, bool* stopping, std::thread& thread) {
  {
    std::lock_guard<std::mutex> lock(mu);
    *stopping = true;
  }
  cv.notify_all();
  if (thread.joinable()) thread.join();
}
}  // namespace

SqliteStore::~SqliteStore() {
  // The committer finishes what is queued first, then the syncer, which the
  // committer fed to the end (callbacks all run), then the background work.
  const bool opened = committer_.joinable();  // Init got as far as serving writes
  StopThread(group_mu_, group_cv_, &group_stopping_, committer_);
  StopThread(sync_mu_, sync_cv_, &sync_stopping_, syncer_);
  StopThread(checkpoint_mu_, checkpoint_cv_, &checkpoint_stopping_, checkpointer_);
  StopThread(reap_mu_, reap_cv_, &stopping_, reaper_);
  if (opened && !options_.in_memory) CarryWriteCounts();
}

Result<std::unique_ptr<SqliteStore>> SqliteStore::Open(const SqliteStoreOptions& options) {
  if (!options.in_memory && options.path.empty()) {
    return Status::InvalidArgument("SqliteStore: no path and not in_memory");
  }
  // Before SQLite initializes (a no-op after): no global mutex around every
  // allocation for memory statistics nobody reads (profiled on point reads).
  static const int memstatus_off = sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
  static_cast<void>(memstatus_off);
  std::unique_ptr<SqliteStore> store(new SqliteStore(options));
  Status s = store->Init();
  if (!s.ok()) return s;
  return store;
}

Status SqliteStore::OpenReader(int64_t cache_bytes, std::unique_ptr<Connection>* out) {
  std::unique_ptr<Connection> reader;
  Status s = Connection::Open(this, options_.path, &reader);
  if (s.ok()) s = reader->Exec("PRAGMA query_only=1");
  // SqliteStoreOptions::reader_mmap_bytes (0, the default: no mapping).
  if (s.ok()) s = reader->Exec("PRAGMA mmap_size=" + std::to_string(options_.reader_mmap_bytes));
  if (s.ok() && cache_bytes > 0) s = reader->Exec(CacheSizePragma(cache_bytes));
  if (s.ok()) *out = std::move(reader);
  return s;
}

// The in-memory database is a file of SQLite's memdb VFS: one growable
// buffer, read through the pager's page cache like a file. A ":memory:"
// database keeps every page in the page cache instead, and SQLite's page
// cache then costs every commit a walk over its hash table: a B-tree split
// that reorders pages moves one through a temporary page number past 1 GiB
// (btree.c, balance_nonroot), and the commit truncates the cache above the
// database's size by scanning the hash buckets up to that number, all of
// them once the cache holds more than a few thousand pages (perf: 60 % of
// the committer's time at ~280 MB; storage/README.md). With memdb the page
// cache has SQLite's default bound (2 MiB), and so has the walk; a miss
// copies the page from memdb's buffer.
Status SqliteStore::InitMemdb() {
  // memdb's default limit is 1 GiB; SQLite allocates below 2 GiB at once.
  // (Its rollback journal is in memory by default.)
  sqlite3_int64 limit = std::min<int64_t>(options_.memory_limit_bytes, int64_t{0x7fff0000});
  int rc = sqlite3_file_control(writer_->db, "main", SQLITE_FCNTL_SIZE_LIMIT, &limit);
  return rc == SQLITE_OK ? Status::Ok() : SqlStatus(writer_->db, rc, "memdb size limit");
}

Status SqliteStore::Init() {
  std::string path = options_.in_memory ? std::string("cerulean-in-memory") : options_.path;
  if (!options_.in_memory) {
    std::filesystem::path dir = std::filesystem::path(path).parent_path();
    if (!dir.empty()) {
      std::error_code ec;
      std::filesystem::create_directories(dir, ec);
      if (ec) return Status::IOError("create directory " + dir.string() + ": " + ec.message());
    }
  }

  Status s = Connection::Open(this, path, &writer_);
  if (!s.ok()) return s;
  Connection* w = writer_.get();
  // The writer's temporary files in memory. In memory mode nothing, not
  // even a sorter spill file, touches the disk. On disk it is the savepoint
  // journal of ApplyOps, the original of every page an Apply changes: SQLite
  // keeps it in memory up to 64 KiB and otherwise writes it to a temporary
  // file, two pwrites a page (4-byte page number, 4 KiB page); a batch
  // of 100 inserts at 100 places of a large partition (a bulk load) changes
  // ~100 pages. Bounded by one Apply (at most 100 entities), so a few
  // hundred KiB at most, freed at RELEASE. In a temporary file it was about
  // a third of a bulk-loaded entity's server CPU.
  s = w->Exec("PRAGMA temp_store=MEMORY");
  if (!s.ok()) return s;
  if (options_.in_memory) {
    s = InitMemdb();
    if (!s.ok()) return s;
  } else {
    // WAL: readers run beside the writer, each on a snapshot. The first
    // statement reads the file: with exclusive_process, it fails at once
    // (no busy wait) when another process holds the database.
    sqlite3_busy_timeout(w->db, 0);
    Stmt stmt;
    s = w->Prepare("PRAGMA journal_mode=WAL", &stmt);
    int rc = s.ok() ? stmt.Step() : SQLITE_OK;
    sqlite3_busy_timeout(w->db, static_cast<int>(options_.busy_timeout.count()));
    if (s.code() == StatusCode::kBusy || (rc & 0xff) == SQLITE_BUSY) {
      return Status::Busy(path + " is in use by another process (is a server running on it?)");
    }
    if (!s.ok()) return s;
    if (rc != SQLITE_ROW) return SqlStatus(w->db, rc, "journal_mode");
    if (stmt.ColumnText(0) != "wal") return Status::IOError("cannot enable WAL on " + path);
    // NORMAL: a commit appends to the WAL without syncing it. With
    // fsync_commits, every durable write is followed by SyncWal before it
    // is acknowledged (SqliteStoreOptions::fsync_commits).
    s = w->Exec("PRAGMA synchronous=NORMAL");
    if (!s.ok()) return s;
    sync_pipeline_ = options_.fsync_commits;
    if (options_.writer_cache_bytes > 0) {
      s = w->Exec(CacheSizePragma(options_.writer_cache_bytes));
      if (!s.ok()) return s;
    }
  }

  int version = 0;
  {
    Stmt stmt;
    s = w->Prepare("PRAGMA user_version", &stmt);
    if (!s.ok()) return s;
    int rc = stmt.Step();
    if (rc != SQLITE_ROW) return SqlStatus(w->db, rc, "user_version");
    version = static_cast<int>(stmt.ColumnInt64(0));
  }
  if (version > kSchemaVersion) {
    return Status::Corruption("database schema version " + std::to_string(version) +
                              " is newer than supported " + std::to_string(kSchemaVersion));
  }
  if (version < kSchemaVersion) {
    s = w->Exec("BEGIN IMMEDIATE");
    if (version < 1) {
      for (const char* sql : kSchemaV1) {
        if (s.ok()) s = w->Exec(sql);
      }
    }
    for (const char* sql : kSchemaV2) {
      if (s.ok()) s = w->Exec(sql);
    }
    if (s.ok()) s = w->Exec("PRAGMA user_version=" + std::to_string(kSchemaVersion));
    if (s.ok()) {
      s = w->Commit();
    } else {
      w->RollbackIfActive();
    }
    if (!s.ok()) return s;
  }
  // Snapshot tables that the last clean close found unwritten hold for this
  // incarnation too (write counts start at 0). See CarryWriteCounts.
  s = Execute(w,
              "UPDATE snapshot_tables SET live_incarnation = ?1, live_writes = 0 "
              "WHERE live_incarnation = -1",
              static_cast<int64_t>(incarnation_));
  if (s.ok()) s = UpdateKeyLogging(w);
  if (!s.ok()) return s;

  if (!options_.in_memory && options_.shared_page_cache_bytes > 0) {
    // Created before the readers open: every connection's whole-page reads
    // of the database file then go through it (wal_vfs.h).
    Stmt stmt;
    s = w->Prepare("PRAGMA page_size", &stmt);
    if (!s.ok()) return s;
    if (stmt.Step() != SQLITE_ROW) return SqlStatus(w->db, SQLITE_ERROR, "page_size");
    PageCacheRequest request;
    request.page_bytes = static_cast<int>(stmt.ColumnInt64(0));
    request.bytes = options_.shared_page_cache_bytes;
    // NOTFOUND: the shim could not open its own descriptor of the file (it
    // then neither paces nor caches); the store works without.
    const int rc = sqlite3_file_control(w->db, "main", kPageCacheFileControl, &request);
    if (rc != SQLITE_OK && rc != SQLITE_NOTFOUND) return SqlStatus(w->db, rc, "shared page cache");
  }

  if (!options_.in_memory) {
    // One reader now, so that a read always has one to wait for; the rest
    // as reads need them (ReadLease).
    std::unique_ptr<Connection> reader;
    s = OpenReader(0, &reader);
    if (!s.ok()) return s;
    {
      std::lock_guard<std::mutex> lock(readers_mu_);
      idle_readers_.push_back(std::move(reader));
      readers_opened_ = 1;
    }

    s = Connection::Open(this, path, &checkpointer_conn_);
    // A connection opens the WAL at its first read; until then
    // sqlite3_wal_checkpoint_v2 on it does nothing (log and copied -1), and
    // the writer would do every checkpoint itself, at the hard limit.
    if (s.ok()) s = checkpointer_conn_->Exec("SELECT count(*) FROM sqlite_master");
    if (s.ok()) s = w->Exec("PRAGMA wal_autocheckpoint=0");
    if (s.ok()) s = w->Exec("PRAGMA journal_size_limit=67108864");
    if (!s.ok()) return s;
    sqlite3_wal_hook(w->db, &SqliteStore::OnWalCommit, this);
    checkpointer_ = std::thread([this] { CheckpointLoop(); });
  }

  if (sync_pipeline_) {
    // The WAL exists once the schema is written. Its first sync, which also
    // syncs the directory, is the syncer's (SyncWalFromSyncer): done here,
    // its I/O waits (milliseconds) would delay the server's listening.
    sqlite3_file* f = nullptr;
    int rc = sqlite3_file_control(w->db, "main", SQLITE_FCNTL_JOURNAL_POINTER, &f);
    if (rc != SQLITE_OK || f == nullptr || f->pMethods == nullptr) {
      return Status::IOError("no WAL file to sync in " + path);
    }
    // Synced from the syncer thread while the writer goes on: the base file,
    // which leaves the writer's gathered frames alone.
    wal_file_ = WalBaseFile(f);
    syncer_ = std::thread([this] { SyncLoop(); });
  }
  committer_ = std::thread([this] { CommitLoop(); });

  if (options_.background_reaping) {
    // Resume reclaiming tables dropped before a restart.
    reap_pending_ = true;
    reaper_ = std::thread([this] { ReaperLoop(); });
  }
  return Status::Ok();
}

template <typename Body>
Status SqliteStore::WriteTransaction(Body&& body, Sync sync) {
  // Lazy transactions are the reaper's own; everyone else goes first.
  if (sync != Sync::kLazy) writers_waiting_.fetch_add(1);
  std::unique_lock<std::mutex> lock(writer_mu_);
  if (sync != Sync::kLazy) writers_waiting_.fetch_sub(1);
  Connection* w = writer_.get();
  Status s = w->Exec("BEGIN IMMEDIATE");
  if (s.ok()) s = body(w);
  if (s.ok()) {
    s = w->Commit();
  } else {
    w->RollbackIfActive();
  }
  write_epoch_.fetch_add(1, std::memory_order_release);
  // A lazy commit is never synced on its own: the next durable sync covers
  // its frames too, and WAL frames are replayed in order, so it can be lost
  // only together with everything after it.
  if (s.ok() && sync == Sync::kDurable && sync_pipeline_) s = SyncWal();
  lock.unlock();
  WriterCacheUsed();
  return s;
}

int64_t SqliteStore::NextTimestamp() {
  last_timestamp_ = std::max(NowTicks(), last_timestamp_ + 1);
  return last_timestamp_;
}

// ---------------------------------------------------------------------------
// Tables and documents.

Status SqliteStore::CreateTable(const std::string& account, const std::string& table) {
  return WriteTransaction([&](Connection* w) {
    Stmt stmt;
    Status s = w->Prepare(
        "INSERT INTO tables(account, name, name_lower, name_key) VALUES (?1, ?2, ?3, ?4)", &stmt);
    if (!s.ok()) return s;
    stmt.BindText(1, account);
    stmt.BindText(2, table);
    stmt.BindText(3, LowerAscii(table));
    stmt.BindBlob(4, EncodeKey(table));
    int rc = stmt.Step();
    if (rc == SQLITE_CONSTRAINT_UNIQUE) return Status::TableAlreadyExists(table);
    if (rc != SQLITE_DONE) return SqlStatus(w->db, rc, "create table");
    return Status::Ok();
  });
}

Status SqliteStore::DeleteTable(const std::string& account, const std::string& table) {
  Status status = WriteTransaction([&](Connection* w) {
    int64_t id = 0;
    Status s = LookupTable(w, account, table, &id);
    if (!s.ok()) return s;
    Stmt doom;
    s = w->Prepare("INSERT INTO doomed_tables(table_id) VALUES (?1)", &doom);
    if (!s.ok()) return s;
    doom.BindInt64(1, id);
    int rc = doom.Step();
    if (rc != SQLITE_DONE) return SqlStatus(w->db, rc, "doom table");
    Stmt drop;
    s = w->Prepare("DELETE FROM tables WHERE id = ?1", &drop);
    if (!s.ok()) return s;
    drop.BindInt64(1, id);
    rc = drop.Step();
    if (rc != SQLITE_DONE) return SqlStatus(w->db, rc, "drop table");
    return Status::Ok();
  });
  if (status.ok()) WakeReaper();
  return status;
}

Result<std::string> SqliteStore::GetTable(const std::string& account, const std::string& table) {
  ReadLease lease(this);
  int64_t id = 0;
  std::string name;
  Status s = LookupTable(lease.conn(), account, table, &id, &name);
  if (!s.ok()) return s;
  return name;
}

Status SqliteStore::ScanTables(const std::string& account, const std::string& start,
                               const std::function<bool(const std::string&)>& visit) {
  // Pages of names are read with a connection held and visited without, so
  // `visit` may call back into the store.
  constexpr int kPage = 256;
  std::string from = EncodeKey(start);
  bool inclusive = true;
  while (true) {
    std::vector<std::string> names;
    {
      ReadLease lease(this);
      Connection* c = lease.conn();
      Stmt stmt;
      Status s = c->Prepare(inclusive ? "SELECT name, name_key FROM tables WHERE account = ?1 AND "
                                        "name_key >= ?2 ORDER BY name_key LIMIT ?3"
                                      : "SELECT name, name_key FROM tables WHERE account = ?1 AND "
                                        "name_key > ?2 ORDER BY name_key LIMIT ?3",
                            &stmt);
      if (!s.ok()) return s;
      stmt.BindText(1, account);
      stmt.BindBlob(2, from);
      stmt.BindInt64(3, kPage);
      int rc;
      while ((rc = stmt.Step()) == SQLITE_ROW) {
        names.emplace_back(stmt.ColumnText(0));
        from = std::string(stmt.ColumnBlob(1));
      }
      if (rc != SQLITE_DONE) return SqlStatus(c->db, rc, "scan tables");
    }
    inclusive = false;
    for (const auto& name : names) {
      if (!visit(name)) return Status::Ok();
    }
    if (names.size() < static_cast<size_t>(kPage)) return Status::Ok();
  }
}

Result<std::string> SqliteStore::GetTableAcl(const std::string& account, const std::string& table) {
  ReadLease lease(this);
  Connection* c = lease.conn();
  Stmt stmt;
  Status s = c->Prepare("SELECT acl FROM tables WHERE account = ?1 AND name_lower = ?2", &stmt);
  if (!s.ok()) return s;
  stmt.BindText(1, account);
  stmt.BindText(2, LowerAscii(table));
  int rc = stmt.Step();
  if (rc == SQLITE_DONE) return Status::TableNotFound(table);
  if (rc != SQLITE_ROW) return SqlStatus(c->db, rc, "get acl");
  return std::string(stmt.ColumnText(0));
}

Status SqliteStore::SetTableAcl(const std::string& account, const std::string& table,
                                const std::string& acl) {
  return WriteTransaction([&](Connection* w) {
    Stmt stmt;
    Status s =
        w->Prepare("UPDATE tables SET acl = ?3 WHERE account = ?1 AND name_lower = ?2", &stmt);
    if (!s.ok()) return s;
    stmt.BindText(1, account);
    stmt.BindText(2, LowerAscii(table));
    stmt.BindText(3, acl);
    int rc = stmt.Step();
    if (rc != SQLITE_DONE) return SqlStatus(w->db, rc, "set acl");
    if (sqlite3_changes(w->db) == 0) return Status::TableNotFound(table);
    return Status::Ok();
  });
}

Result<std::string> SqliteStore::GetServiceProperties(const std::string& account) {
  ReadLease lease(this);
  Connection* c = lease.conn();
  Stmt stmt;
  Status s = c->Prepare("SELECT service_properties FROM accounts WHERE account = ?1", &stmt);
  if (!s.ok()) return s;
  stmt.BindText(1, account);
  int rc = stmt.Step();
  if (rc == SQLITE_DONE) return std::string();
  if (rc != SQLITE_ROW) return SqlStatus(c->db, rc, "get service properties");
  return std::string(stmt.ColumnText(0));
}

Status SqliteStore::SetServiceProperties(const std::string& account, const std::string& props) {
  return WriteTransaction([&](Connection* w) {
    Stmt stmt;
    Status s = w->Prepare(
        "INSERT INTO accounts(account, service_properties) VALUES (?1, ?2) "
        "ON CONFLICT(account) DO UPDATE SET service_properties = excluded.service_properties",
        &stmt);
    if (!s.ok()) return s;
    stmt.BindText(1, account);
    stmt.BindText(2, props);
    int rc = stmt.Step();
    if (rc != SQLITE_DONE) return SqlStatus(w->db, rc, "set service properties");
    return Status::Ok();
  });
}

Status SqliteStore::ResetAccount(const std::string& account) {
  Status status = WriteTransaction([&](Connection* w) {
    const char* kSteps[] = {
        "INSERT INTO doomed_tables(table_id) SELECT id FROM tables WHERE account = ?1",
        "DELETE FROM tables WHERE account = ?1",
        "DELETE FROM accounts WHERE account = ?1",
    };
    for (const char* sql : kSteps) {
      Stmt stmt;
      Status s = w->Prepare(sql, &stmt);
      if (!s.ok()) return s;
      stmt.BindText(1, account);
      int rc = stmt.Step();
      if (rc != SQLITE_DONE) return SqlStatus(w->db, rc, "reset account");
    }
    return Status::Ok();
  });
  if (status.ok()) WakeReaper();
  return status;
}

bool SqliteStore::Healthy() {
  ReadLease lease(this);
  Stmt stmt;
  if (!lease.conn()->Prepare("SELECT 1", &stmt).ok()) return false;
  return stmt.Step() == SQLITE_ROW;
}

Status SqliteStore::GetUsage(std::vector<AccountUsage>* accounts, uint64_t* bytes) {
  accounts->clear();
  *bytes = 0;
  ReadLease lease(this);
  Connection* c = lease.conn();
  // One snapshot for both counts.
  Status s = c->Exec("BEGIN");
  std::map<std::string, AccountUsage> by_account;
  if (s.ok()) {
    Stmt tables;
    s = c->Prepare("SELECT account, COUNT(*) FROM tables GROUP BY account", &tables);
    int rc = SQLITE_DONE;
    while (s.ok() && (rc = tables.Step()) == SQLITE_ROW) {
      std::string account(tables.ColumnText(0));
      AccountUsage& u = by_account[account];
      u.account = account;
      u.tables = static_cast<uint64_t>(tables.ColumnInt64(1));
    }
    if (s.ok() && rc != SQLITE_DONE) s = SqlStatus(c->db, rc, "count tables");
  }
  if (s.ok()) {
    // Rows of dropped tables awaiting the reaper have no `tables` row.
    Stmt entities;
    s = c->Prepare(
        "SELECT t.account, COUNT(*) FROM tables t JOIN entities e ON e.table_id = t.id GROUP BY "
        "t.account",
        &entities);
    int rc = SQLITE_DONE;
    while (s.ok() && (rc = entities.Step()) == SQLITE_ROW) {
      by_account[std::string(entities.ColumnText(0))].entities =
          static_cast<uint64_t>(entities.ColumnInt64(1));
    }
    if (s.ok() && rc != SQLITE_DONE) s = SqlStatus(c->db, rc, "count entities");
  }
  c->RollbackIfActive();
  if (!s.ok()) return s;
  for (auto& [name, usage] : by_account) accounts->push_back(std::move(usage));
  if (!options_.in_memory) {
    for (const char* suffix : {"", "-wal", "-shm"}) {
      std::error_code ec;
      auto size = std::filesystem::file_size(options_.path + suffix, ec);
      if (!ec) *bytes += size;
    }
  }
  return Status::Ok();
}

// ---------------------------------------------------------------------------
// Entities.

Status SqliteStore::GetEntityRow(const std::string& account, const std::string& table,
                                 const std::string& partition_key, const std::string& row_key,
                                 const RowVisitor& visit) {
  ReadLease lease(this, ReadLease::kPoint);
  Connection* c = lease.conn();
  if (!IsEncodableKey(partition_key) || !IsEncodableKey(row_key)) {
    // Such keys are never stored; their encodings would alias others.
    int64_t id = 0;
    Status s = LookupTable(c, account, table, &id);
    if (!s.ok()) return s;
    return Status::NotFound();
  }
  // One statement, so one snapshot for the table lookup and the row read:
  // no row means no table, a NULL ts means no entity (ts is NOT NULL).
  // Bound without copies (the statement goes before these).
  const std::string lower = LowerAscii(table);
  const std::string pk = EncodeKey(partition_key);
  const std::string rk = EncodeKey(row_key);
  Stmt stmt;
  Status s = c->Prepare(
      "SELECT e.ts, e.props FROM tables t LEFT JOIN entities e "
      "ON e.table_id = t.id AND e.pk = ?3 AND e.rk = ?4 "
      "WHERE t.account = ?1 AND t.name_lower = ?2",
      &stmt);
  if (!s.ok()) return s;
  stmt.BindTextNoCopy(1, account);
  stmt.BindTextNoCopy(2, lower);
  stmt.BindBlobNoCopy(3, pk);
  stmt.BindBlobNoCopy(4, rk);
  int rc = stmt.Step();
  if (rc == SQLITE_DONE) return Status::TableNotFound(table);
  if (rc != SQLITE_ROW) return SqlStatus(c->db, rc, "get entity");
  if (stmt.ColumnType(0) == SQLITE_NULL) return Status::NotFound();
  EntityRow row;
  row.partition_key = partition_key;
  row.row_key = row_key;
  row.timestamp = stmt.ColumnInt64(0);
  row.properties = stmt.ColumnBlob(1);
  return visit(row);
}

Status SqliteStore::ScanRows(const std::string& account, const std::string& table,
                             const ScanRequest& request, const RowVisitor& visit,
                             std::optional<EntityKey>* next) {
  next->reset();
  ReadLease lease(this, request.point_reader ? ReadLease::kPoint : ReadLease::kAny);
  Connection* c = lease.conn();
  // One read transaction: every range of the page sees one snapshot.
  Status s = c->Exec("BEGIN");
  int64_t id = 0;
  if (s.ok()) s = LookupTable(c, account, table, &id);
  if (!s.ok()) return s;

  // Rows are visited from these, reused row after row (no allocation once
  // they have grown to the page's largest keys and entity).
  std::string pk, rk;
  Entity decoded;
  size_t examined = 0, visited = 0;
  for (const KeyRange& range : request.ranges) {
    std::optional<KeyBound> lower = EffectiveLower(range.lower, request.start);
    std::string sql = "SELECT pk, rk, ts, props FROM entities WHERE table_id = ?1";
    AppendRangeSql(lower, range.upper, &sql);
    sql += " ORDER BY pk, rk";
    Stmt stmt;
    s = c->Prepare(sql, &stmt);
    if (!s.ok()) return s;
    stmt.BindInt64(1, id);
    BindRange(&stmt, lower, range.upper);
    int rc;
    while ((rc = stmt.Step()) == SQLITE_ROW) {
      if (examined >= request.max_examined || visited >= request.limit) {
        // Budget spent: this row is where the next page starts.
        EntityKey key;
        s = DecodeKeyInto(stmt.ColumnBlob(0), &key.partition_key);
        if (s.ok()) s = DecodeKeyInto(stmt.ColumnBlob(1), &key.row_key);
        if (!s.ok()) return s;
        *next = std::move(key);
        return Status::Ok();
      }
      if (request.abandon && examined % ScanRequest::kRowsPerAbandonPoll == 0 &&
          request.abandon()) {
        return Status::Busy("scan abandoned");
      }
      ++examined;
      EntityRow row;
      row.timestamp = stmt.ColumnInt64(2);
      row.properties = stmt.ColumnBlob(3);
      if (request.predicate) {
        s = DecodeRow(stmt.ColumnBlob(0), stmt.ColumnBlob(1), row.timestamp, row.properties,
                      &decoded);
        if (!s.ok()) return s;
        if (!request.predicate(decoded)) continue;
        row.partition_key = decoded.partition_key;
        row.row_key = decoded.row_key;
        row.decoded = &decoded;
      } else {
        s = DecodeKeyInto(stmt.ColumnBlob(0), &pk);
        if (s.ok()) s = DecodeKeyInto(stmt.ColumnBlob(1), &rk);
        if (!s.ok()) return s;
        row.partition_key = pk;
        row.row_key = rk;
      }
      ++visited;
      s = visit(row);
      if (!s.ok()) return s;
    }
    if (rc != SQLITE_DONE) return SqlStatus(c->db, rc, "scan");
  }
  return Status::Ok();
}

// Applies, and ops, committed together at most (see CommitLoop). Large
// enough that at 64 connections of single inserts one sync covers ~50 of
// them (groups of at most 16 gave ~15 % fewer inserts/s: PROFILER=none
// scripts/profile.sh insert 10 64). The ops bound keeps a group of large
// batches from growing into one very long transaction.
constexpr size_t kMaxGroup = 64;
constexpr size_t kMaxGroupOps = 1024;
// An Apply of at least this many ops has the committer start at once
// (Enqueue).
constexpr size_t kLargeApplyOps = 32;

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

Status SqliteStore::ApplyOps(Connection* w, PendingApply* p, GroupTableId* table_id, bool* wrote) {
  const std::string& account = p->account;
  const std::string& table = p->table;
  const std::vector<WriteOp>& ops = p->ops;
  *wrote = false;
  p->timestamps.clear();
  p->timestamps.reserve(ops.size());
  p->failed = 0;
  // The table's id, looked up once per group and table: a lookup is ~5.5k
  // instructions, ~4 % of a single insert's (callgrind, scripts/profile.sh
  // insert), and a group's Applies usually address one table.
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

  // Phase 2: write. An insert may still be refused (its row exists): with
  // other ops before it, a savepoint undoes them, so that a refused Apply
  // leaves the transaction as it found it. Any other failure here is
  // SQLite's own (I/O, disk full): the caller abandons the whole transaction.
  p->failed = 0;
  const bool savepoint = inserts > 0 && ops.size() > 1;
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
      // The statement undid itself; the savepoint undoes the ops before it.
      if (savepoint) {
        s = w->Exec("ROLLBACK TO apply");
        if (s.ok()) s = w->Exec("RELEASE apply");
        if (!s.ok()) return s;
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
  writers_waiting_.fetch_add(1);
  std::unique_lock<std::mutex> lock(writer_mu_);
  writers_waiting_.fetch_sub(1);
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
    return;
  }
  s = w->Commit();
  write_epoch_.fetch_add(1, std::memory_order_release);
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
  // waits until the caller's time slice ends, ~0.7 ms (perf sched
  // timehist), before it commits and hands the group to the syncer: the WAL
  // sync started late instead of overlapping the caller's next request.
  // With more cores the committer runs elsewhere and this returns at once.
  // Small Applies do not yield: at 16 connections single inserts would then
  // commit one at a time, at less than half the rate. With 100-entity
  // batches at 4 in flight on one core the yield gives ~20 % more batches/s
  // (PROFILER=none scripts/profile.sh batch 8 4).
  if (large) sched_yield();
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
    // the woken committer otherwise takes a group of ~4.5 single inserts
    // and leaves the others for the next; with this yield groups hold ~10
    // at 16 connections, and an insert costs ~10 % less server CPU
    // (PROFILER=none scripts/profile.sh insert 12 16). With nothing else
    // runnable on this core the yield returns at once. Large Applies were
    // asked to start at once (Enqueue) and do not wait.
    if (group_queue_.size() < kMaxGroup && !group_queue_.front()->large()) {
      lock.unlock();
      sched_yield();
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
    if (!writes.empty()) CommitGroup(writes);
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
    writers_waiting_.fetch_add(1);
    std::lock_guard<std::mutex> lock(writer_mu_);
    writers_waiting_.fetch_sub(1);
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
    // too, so that one sync covers both. On one core the syncer otherwise
    // runs ~1.7 times per group of single inserts, and each sync (page
    // writeback, the device flush) is costly: with the yield an insert at
    // c16 costs ~10 % less server CPU (PROFILER=none scripts/profile.sh
    // insert 10 16). Not for batches: at four in flight they lose ~9 %, as
    // the core idles while each waits for the other's commit.
    if (std::none_of(sync_queue_.begin(), sync_queue_.end(),
                     [](const auto& p) { return p->large(); })) {
      lock.unlock();
      sched_yield();
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
  int rc = wal_file_->pMethods->xSync(wal_file_, SQLITE_SYNC_NORMAL);
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

// ---------------------------------------------------------------------------
// Reaping.

void SqliteStore::WakeReaper() {
  {
    std::lock_guard<std::mutex> lock(reap_mu_);
    reap_pending_ = true;
  }
  reap_cv_.notify_all();
}

int SqliteStore::OnWalCommit(void* store, sqlite3* db, const char*, int pages) {
  auto* self = static_cast<SqliteStore*>(store);
  const int64_t generation_before = self->wal_planner_.generation();
  WalAction action;
  {
    std::lock_guard<std::mutex> lock(self->checkpoint_mu_);
    BackgroundCheckpoint background = self->checkpoint_last_;
    background.busy = self->checkpoint_pending_ || self->checkpoint_running_;
    action = self->wal_planner_.AfterCommit(pages, background);
    self->checkpoint_wal_pages_ = pages;
    self->checkpoint_wal_generation_ = self->wal_planner_.generation();
    ++self->checkpoint_commits_;
    if (action == WalAction::kStartBackground) {
      self->checkpoint_pending_ = true;
      self->checkpoint_generation_ = self->wal_planner_.generation();
    }
  }
  if (self->wal_planner_.generation() != generation_before) {
    self->wal_rewinds_.fetch_add(1, std::memory_order_relaxed);
  }
  if (action == WalAction::kStartBackground) {
    self->checkpoint_cv_.notify_one();
  } else if (action == WalAction::kCopyInWriter) {
    self->checkpoints_writer_.fetch_add(1, std::memory_order_relaxed);
    int log_pages = 0, copied = 0;
    static_cast<void>(
        sqlite3_wal_checkpoint_v2(db, nullptr, SQLITE_CHECKPOINT_PASSIVE, &log_pages, &copied));
  }
  return SQLITE_OK;
}

void SqliteStore::CheckpointLoop() {
  NameThisThread("cerulean-ckpt");
  std::unique_lock<std::mutex> lock(checkpoint_mu_);
  while (true) {
    checkpoint_cv_.wait(lock, [this] { return checkpoint_stopping_ || checkpoint_pending_; });
    if (checkpoint_stopping_) return;
    checkpoint_pending_ = false;
    checkpoint_running_ = true;
    const int64_t generation = checkpoint_generation_;
    lock.unlock();
    // PASSIVE: copies what no reader still needs, never waits for locks. A
    // failure (e.g. SQLITE_BUSY) is retried at the next trigger.
    int log_pages = 0, copied = 0;
    const int rc = sqlite3_wal_checkpoint_v2(checkpointer_conn_->db, nullptr,
                                             SQLITE_CHECKPOINT_PASSIVE, &log_pages, &copied);
    checkpoints_background_.fetch_add(1, std::memory_order_relaxed);
    lock.lock();
    checkpoint_running_ = false;
    if (rc != SQLITE_OK || copied < 0) continue;
    const bool progressed =
        checkpoint_last_.copied_generation != generation || copied > checkpoint_last_.copied;
    checkpoint_last_.copied = copied;
    checkpoint_last_.copied_generation = generation;
    // Frames committed during the pass are left for the next one, which a
    // commit asks for (or the writer copies them: wal_checkpoint.h). When
    // writes stop, no commit comes: after a bulk load the last ~6,000
    // frames waited for the next write, a Delete Table that then took
    // 40-70 ms copying them at the hard limit. So once no commit has come
    // for a moment, the checkpointer copies them. Not again if the pass
    // copied nothing new (a reader's snapshot holds it back), and not if a
    // commit has already asked for a pass or rewound the WAL.
    if (!progressed || checkpoint_pending_ || checkpoint_wal_generation_ != generation ||
        checkpoint_wal_pages_ <= copied) {
      continue;
    }
    const uint64_t commits = checkpoint_commits_;
    if (!checkpoint_cv_.wait_for(lock, options_.checkpoint_idle_pass_after, [&] {
          return checkpoint_stopping_ || checkpoint_pending_ || checkpoint_commits_ != commits;
        })) {
      checkpoint_pending_ = true;
      checkpoints_idle_.fetch_add(1, std::memory_order_relaxed);
    }
  }
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
      // pause, and start the next chunk only when no write waits for it.
      if (more && s.ok()) {
        do {
          reap_cv_.wait_for(lock, std::chrono::milliseconds(1));
          if (stopping_) return;
        } while (writers_waiting_.load() > 0 || GroupQueued());
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

SqliteStoreStats SqliteStore::GetStats() const {
  SqliteStoreStats stats;
  stats.statements_prepared = statements_prepared_.load(std::memory_order_relaxed);
  stats.statements_run = statements_run_.load(std::memory_order_relaxed);
  stats.vm_steps = vm_steps_.load(std::memory_order_relaxed);
  stats.checkpoints_background = checkpoints_background_.load(std::memory_order_relaxed);
  stats.checkpoints_idle = checkpoints_idle_.load(std::memory_order_relaxed);
  stats.checkpoints_writer = checkpoints_writer_.load(std::memory_order_relaxed);
  stats.wal_rewinds = wal_rewinds_.load(std::memory_order_relaxed);
  stats.writer_cache_releases = writer_cache_releases_.load(std::memory_order_relaxed);
  stats.writer_cache_bytes_released = writer_cache_bytes_released_.load(std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(readers_mu_);
  stats.readers_open = readers_opened_;
  stats.point_readers_open = point_readers_opened_;
  return stats;
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

// ---------------------------------------------------------------------------
// Snapshots (storage/README.md, "Snapshots").

namespace {

// The id of snapshot `name` of `account`, or kNotFound.
template <typename Conn>
Status LookupSnapshot(Conn* c, const std::string& account, const std::string& name, int64_t* id) {
  *id = 0;
  Status s = Query(
      c, "SELECT id FROM snapshots WHERE account = ?1 AND name = ?2",
      [&](Stmt& row) { *id = row.ColumnInt64(0); }, std::string_view(account),
      std::string_view(name));
  if (s.ok() && *id == 0) return Status::NotFound("snapshot " + name);
  return s;
}

// Deletes snapshot `id` and its rows.
template <typename Conn>
Status DropSnapshot(Conn* c, int64_t id) {
  Status s = Execute(c, "DELETE FROM snapshot_entities WHERE snapshot_id = ?1", id);
  if (s.ok()) s = Execute(c, "DELETE FROM snapshot_tables WHERE snapshot_id = ?1", id);
  if (s.ok()) s = Execute(c, "DELETE FROM snapshots WHERE id = ?1", id);
  return s;
}

}  // namespace

uint64_t SqliteStore::TableWrites(int64_t table_id) const {
  auto it = table_changes_.find(table_id);
  return it == table_changes_.end() ? 0 : it->second.writes;
}

void SqliteStore::LogKey(TableChanges* changes, std::string_view pk, std::string_view rk) {
  auto& keys = changes->keys;
  if (keys.size() >= kMaxLoggedKeys || changes->key_bytes >= kMaxLoggedKeyBytes) {
    // Drop the older half: a restore to a state before what remains copies
    // the table whole.
    const size_t drop = std::max<size_t>(1, keys.size() / 2);
    changes->logged_from = keys[drop - 1].write;
    for (size_t i = 0; i < drop; ++i) changes->key_bytes -= keys[i].pk.size() + keys[i].rk.size();
    keys.erase(keys.begin(), keys.begin() + static_cast<ptrdiff_t>(drop));
  }
  keys.push_back({changes->writes, std::string(pk), std::string(rk)});
  changes->key_bytes += pk.size() + rk.size();
}

Status SqliteStore::UpdateKeyLogging(Connection* w) {
  bool any = false;
  Status s = Query(w, "SELECT 1 FROM snapshots LIMIT 1", [&](Stmt&) { any = true; });
  if (!s.ok()) return s;
  log_keys_ = any;
  if (!any) {
    for (auto& [id, changes] : table_changes_) {
      changes.keys.clear();
      changes.key_bytes = 0;
      changes.logged_from = changes.writes;
    }
  }
  return Status::Ok();
}

Status SqliteStore::SaveSnapshot(const std::string& account, const std::string& name,
                                 SnapshotInfo* info) {
  SnapshotInfo saved;
  saved.name = name;
  const std::string_view acct(account);
  Status status = WriteTransaction([&](Connection* w) {
    int64_t id = 0;
    Status s = LookupSnapshot(w, account, name, &id);
    if (s.ok()) s = DropSnapshot(w, id);
    if (!s.ok() && s.code() != StatusCode::kNotFound) return s;
    saved.created = NowTicks();
    s = Execute(w,
                "INSERT INTO snapshots(account, name, created, service_properties) SELECT ?1, "
                "?2, ?3, (SELECT service_properties FROM accounts WHERE account = ?1)",
                acct, std::string_view(name), saved.created);
    if (!s.ok()) return s;
    id = sqlite3_last_insert_rowid(w->db);
    struct Table {
      int64_t id;
      std::string name, acl;
    };
    std::vector<Table> tables;
    s = Query(
        w, "SELECT id, name, acl FROM tables WHERE account = ?1 ORDER BY id",
        [&](Stmt& row) {
          tables.push_back(
              {row.ColumnInt64(0), std::string(row.ColumnText(1)), std::string(row.ColumnText(2))});
        },
        acct);
    for (int64_t ord = 0; s.ok() && ord < static_cast<int64_t>(tables.size()); ++ord) {
      const Table& t = tables[static_cast<size_t>(ord)];
      s = Execute(w,
                  "INSERT INTO snapshot_entities(snapshot_id, ord, pk, rk, ts, props) "
                  "SELECT ?1, ?2, pk, rk, ts, props FROM entities WHERE table_id = ?3",
                  id, ord, t.id);
      if (!s.ok()) break;
      const int64_t rows = sqlite3_changes64(w->db);
      s = Execute(w,
                  "INSERT INTO snapshot_tables(snapshot_id, ord, name, acl, entities, live_id, "
                  "live_writes, live_incarnation) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                  id, ord, std::string_view(t.name), std::string_view(t.acl), rows, t.id,
                  static_cast<int64_t>(TableWrites(t.id)), static_cast<int64_t>(incarnation_));
      saved.tables += 1;
      saved.entities += static_cast<uint64_t>(rows);
    }
    if (s.ok()) log_keys_ = true;
    return s;
  });
  if (status.ok() && info != nullptr) *info = std::move(saved);
  return status;
}

Status SqliteStore::RestoreSnapshot(const std::string& account, const std::string& name,
                                    RestoreStats* stats) {
  RestoreStats done;
  bool doomed = false;
  const std::string_view acct(account);
  Status status = WriteTransaction([&](Connection* w) {
    int64_t id = 0;
    Status s = LookupSnapshot(w, account, name, &id);
    if (!s.ok()) return s;
    struct Saved {
      int64_t ord;
      std::string name, acl;
      int64_t entities, live_id, live_writes, live_incarnation;
      bool kept = false;  // the live table live_id is this one, or is patched into it
    };
    std::vector<Saved> saved;
    s = Query(
        w,
        "SELECT ord, name, acl, entities, live_id, live_writes, live_incarnation "
        "FROM snapshot_tables WHERE snapshot_id = ?1 ORDER BY ord",
        [&](Stmt& row) {
          saved.push_back({row.ColumnInt64(0), std::string(row.ColumnText(1)),
                           std::string(row.ColumnText(2)), row.ColumnInt64(3), row.ColumnInt64(4),
                           row.ColumnInt64(5), row.ColumnInt64(6)});
        },
        id);
    // Live tables: kept iff still exactly the saved one, else dropped.
    std::unordered_map<int64_t, std::string> live;  // id -> name
    if (s.ok()) {
      s = Query(
          w, "SELECT id, name FROM tables WHERE account = ?1",
          [&](Stmt& row) { live.emplace(row.ColumnInt64(0), std::string(row.ColumnText(1))); },
          acct);
    }
    if (!s.ok()) return s;
    // A live table is kept (and patched if written) iff it is still the
    // one the snapshot table's rows were saved from or restored into.
    for (Saved& t : saved) {
      auto it = live.find(t.live_id);
      t.kept = it != live.end() && it->second == t.name &&
               static_cast<uint64_t>(t.live_incarnation) == incarnation_;
      if (t.kept) live.erase(it);
    }
    for (const auto& [table_id, table_name] : live) {
      s = Execute(w, "INSERT INTO doomed_tables(table_id) VALUES (?1)", table_id);
      if (s.ok()) s = Execute(w, "DELETE FROM tables WHERE id = ?1", table_id);
      if (!s.ok()) return s;
      doomed = true;
    }
    for (const Saved& t : saved) {
      if (t.kept) {
        s = Execute(w, "UPDATE tables SET acl = ?2 WHERE id = ?1", t.live_id,
                    std::string_view(t.acl));
        bool restored = false;
        if (s.ok()) {
          s = PatchTable(w, id, t.ord, t.live_id, t.live_writes, t.entities, &done, &restored);
        }
        if (!s.ok()) return s;
        if (restored) continue;
        // Copied whole instead: the live table goes.
        s = Execute(w, "INSERT INTO doomed_tables(table_id) VALUES (?1)", t.live_id);
        if (s.ok()) s = Execute(w, "DELETE FROM tables WHERE id = ?1", t.live_id);
        if (!s.ok()) return s;
        doomed = true;
      }
      // A fresh table id (AUTOINCREMENT: above every other), so the copy
      // appends to the end of the entities B-tree.
      {
        Stmt stmt;
        s = w->Prepare(
            "INSERT INTO tables(account, name, name_lower, name_key, acl) "
            "VALUES (?1, ?2, ?3, ?4, ?5)",
            &stmt);
        if (!s.ok()) return s;
        stmt.BindText(1, account);
        stmt.BindText(2, t.name);
        stmt.BindText(3, LowerAscii(t.name));
        stmt.BindBlob(4, EncodeKey(t.name));
        stmt.BindText(5, t.acl);
        s = RunToDone(w->db, stmt, "restore table");
        if (!s.ok()) return s;
      }
      const int64_t table_id = sqlite3_last_insert_rowid(w->db);
      s = Execute(w,
                  "INSERT INTO entities(table_id, pk, rk, ts, props) SELECT ?1, pk, rk, ts, props "
                  "FROM snapshot_entities WHERE snapshot_id = ?2 AND ord = ?3",
                  table_id, id, t.ord);
      if (!s.ok()) return s;
      done.entities_copied += static_cast<uint64_t>(sqlite3_changes64(w->db));
      // The new table holds exactly the saved rows: the next restore of
      // this snapshot keeps it unless it is written meanwhile.
      s = Execute(w,
                  "UPDATE snapshot_tables SET live_id = ?3, live_writes = 0, "
                  "live_incarnation = ?4 WHERE snapshot_id = ?1 AND ord = ?2",
                  id, t.ord, table_id, static_cast<int64_t>(incarnation_));
      if (!s.ok()) return s;
      done.tables_copied += 1;
    }
    s = Execute(w,
                "INSERT OR REPLACE INTO accounts(account, service_properties) SELECT ?1, "
                "service_properties FROM snapshots WHERE id = ?2 AND service_properties IS NOT "
                "NULL",
                acct, id);
    if (s.ok() && sqlite3_changes64(w->db) == 0) {
      s = Execute(w, "DELETE FROM accounts WHERE account = ?1", acct);
    }
    return s;
  });
  if (doomed) WakeReaper();
  if (status.ok() && stats != nullptr) *stats = done;
  return status;
}

Status SqliteStore::PatchTable(Connection* w, int64_t snapshot_id, int64_t ord, int64_t live_id,
                               int64_t live_writes, int64_t entities, RestoreStats* stats,
                               bool* done) {
  *done = false;
  TableChanges& changes = table_changes_[live_id];
  const uint64_t since = static_cast<uint64_t>(live_writes);
  if (changes.writes == since) {
    stats->tables_kept += 1;
    *done = true;
    return Status::Ok();
  }
  if (changes.writes < since || changes.logged_from > since) return Status::Ok();
  std::set<std::pair<std::string_view, std::string_view>> keys;
  for (const auto& key : changes.keys) {
    if (key.write > since) keys.emplace(key.pk, key.rk);
  }
  // Past this, one INSERT ... SELECT of the whole table is cheaper than a
  // delete and a lookup per key.
  if (keys.size() > std::max<size_t>(1000, static_cast<size_t>(entities) / 4)) {
    return Status::Ok();
  }
  Status s;
  for (const auto& [pk, rk] : keys) {
    s = Execute(w, "DELETE FROM entities WHERE table_id = ?1 AND pk = ?2 AND rk = ?3", live_id,
                Blob{pk}, Blob{rk});
    if (!s.ok()) return s;
    s = Execute(w,
                "INSERT INTO entities(table_id, pk, rk, ts, props) SELECT ?1, pk, rk, ts, props "
                "FROM snapshot_entities WHERE snapshot_id = ?2 AND ord = ?3 AND pk = ?4 AND "
                "rk = ?5",
                live_id, snapshot_id, ord, Blob{pk}, Blob{rk});
    if (!s.ok()) return s;
    stats->entities_copied += static_cast<uint64_t>(sqlite3_changes64(w->db));
  }
  // The rows put back are a write like any other: other snapshots' restores
  // must put them back too. (The views in `keys` point into changes.keys,
  // which LogKey may reorder: copy them first.)
  std::vector<std::pair<std::string, std::string>> written(keys.begin(), keys.end());
  changes.writes += 1;
  for (const auto& [pk, rk] : written) LogKey(&changes, pk, rk);
  s = Execute(w, "UPDATE snapshot_tables SET live_writes = ?3 WHERE snapshot_id = ?1 AND ord = ?2",
              snapshot_id, ord, static_cast<int64_t>(changes.writes));
  if (!s.ok()) return s;
  stats->tables_patched += 1;
  *done = true;
  return Status::Ok();
}

Status SqliteStore::ListSnapshots(const std::string& account, std::vector<SnapshotInfo>* out) {
  out->clear();
  ReadLease lease(this);
  return Query(
      lease.conn(),
      "SELECT s.name, s.created, COUNT(t.ord), COALESCE(SUM(t.entities), 0) FROM snapshots s "
      "LEFT JOIN snapshot_tables t ON t.snapshot_id = s.id WHERE s.account = ?1 "
      "GROUP BY s.id ORDER BY s.name",
      [&](Stmt& row) {
        out->push_back({std::string(row.ColumnText(0)), row.ColumnInt64(1),
                        static_cast<uint64_t>(row.ColumnInt64(2)),
                        static_cast<uint64_t>(row.ColumnInt64(3))});
      },
      std::string_view(account));
}

Status SqliteStore::DeleteSnapshot(const std::string& account, const std::string& name) {
  return WriteTransaction([&](Connection* w) {
    int64_t id = 0;
    Status s = LookupSnapshot(w, account, name, &id);
    if (s.ok()) s = DropSnapshot(w, id);
    if (s.ok()) s = UpdateKeyLogging(w);
    return s;
  });
}

void SqliteStore::CarryWriteCounts() {
  // Best effort: a failure leaves the rows of this incarnation, which the
  // next one re-copies on restore.
  static_cast<void>(WriteTransaction([&](Connection* w) {
    struct Row {
      int64_t snapshot_id, ord, live_id, live_writes;
    };
    std::vector<Row> rows;
    Status s = Query(
        w,
        "SELECT snapshot_id, ord, live_id, live_writes FROM snapshot_tables "
        "WHERE live_incarnation = ?1",
        [&](Stmt& row) {
          rows.push_back(
              {row.ColumnInt64(0), row.ColumnInt64(1), row.ColumnInt64(2), row.ColumnInt64(3)});
        },
        static_cast<int64_t>(incarnation_));
    for (const Row& row : rows) {
      if (!s.ok()) break;
      if (TableWrites(row.live_id) != static_cast<uint64_t>(row.live_writes)) continue;
      s = Execute(w,
                  "UPDATE snapshot_tables SET live_incarnation = -1 "
                  "WHERE snapshot_id = ?1 AND ord = ?2",
                  row.snapshot_id, row.ord);
    }
    return s;
  }));
}

}  // namespace cerulean::storage
