#include "storage/sqlite/sqlite_store.h"

#include <sqlite3.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string_view>
#include <system_error>

#include "storage/platform.h"
#include "storage/sqlite/sqlite_internal.h"
#include "storage/sqlite/wal_vfs.h"

namespace cerulean::storage {

std::string CacheSizePragma(int64_t bytes) {
  return "PRAGMA cache_size=-" + std::to_string(std::max<int64_t>(1, bytes >> 10));
}

namespace {
// File stores open now, by their database file's name as SQLite gives it
// (sqlite3_db_filename): SqlStatus sees only a connection.
std::mutex& DamageMu() {
  static std::mutex mu;
  return mu;
}
std::map<std::string, SqliteStore*, std::less<>>& StoresByFile() {
  static std::map<std::string, SqliteStore*, std::less<>> stores;  // guarded by DamageMu()
  return stores;
}

// Runs `pragma` (quick_check or integrity_check) on `db`: the problems it
// lists, none iff "ok".
Status ListProblems(sqlite3* db, const char* pragma, std::vector<std::string>* problems) {
  problems->clear();
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v2(db, pragma, -1, &stmt, nullptr);
  if (rc == SQLITE_OK) {
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
      const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
      std::string line = text != nullptr ? text : "";
      if (line != "ok") problems->push_back(std::move(line));
    }
  }
  sqlite3_finalize(stmt);
  // SQLite's own verdict on a file it cannot read as a database at all.
  if ((rc & 0xff) == SQLITE_CORRUPT || (rc & 0xff) == SQLITE_NOTADB) {
    problems->push_back(sqlite3_errstr(rc));
    return Status::Ok();
  }
  return rc == SQLITE_DONE ? Status::Ok() : SqlStatus(nullptr, rc, pragma);
}

std::string JoinProblems(const std::vector<std::string>& problems) {
  std::string out;
  for (size_t i = 0; i < problems.size() && i < 5; ++i) out += (i ? "; " : "") + problems[i];
  if (problems.size() > 5) out += "; ... (" + std::to_string(problems.size()) + " in all)";
  return out;
}
}  // namespace

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
      SqliteStore::NoteDamage(db, msg);
      return Status::Corruption(std::move(msg));
    default:
      return Status::IOError(std::move(msg));
  }
}

SqliteStore::SqliteStore(const SqliteStoreOptions& options)
    : options_(options),
      // Stored as an SQLite INTEGER: 63 bits.
      incarnation_((RandomU64() ^ static_cast<uint64_t>(NowTicks())) & 0x7fffffffffffffff) {}

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
  if (!damage_file_.empty()) {
    std::lock_guard<std::mutex> lock(DamageMu());
    StoresByFile().erase(damage_file_);
  }
}

Result<std::unique_ptr<SqliteStore>> SqliteStore::Open(const SqliteStoreOptions& options) {
  if (!options.in_memory && options.path.empty()) {
    return Status::InvalidArgument("SqliteStore: no path and not in_memory");
  }
  // Before SQLite initializes (a no-op after): no global mutex around every
  // allocation for memory statistics nobody reads (a cost on every read).
  static const int memstatus_off = sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
  static_cast<void>(memstatus_off);
  std::unique_ptr<SqliteStore> store(new SqliteStore(options));
  Status s = store->Init();
  if (!s.ok()) return s;
  return store;
}

// The in-memory database is a file of SQLite's memdb VFS: one growable
// buffer, read through the pager's page cache like a file. A ":memory:"
// database keeps every page in the page cache instead, and SQLite's page
// cache then costs every commit a walk over its hash table: a B-tree split
// that reorders pages moves one through a temporary page number past 1 GiB
// (btree.c, balance_nonroot), and the commit truncates the cache above the
// database's size by scanning the hash buckets up to that number, all of
// them once the cache holds more than a few thousand pages, so that the
// walk grows with the database (storage/README.md). With memdb the page
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
  // journal of ApplyOps (an Apply of inserts and other ops), the original of
  // every page the Apply changes: SQLite keeps it in memory up to 64 KiB and
  // otherwise writes it to a temporary file, two pwrites a page (4-byte page
  // number, 4 KiB page); a batch of 100 writes at 100 places of a large
  // partition changes ~100 pages. Bounded by one Apply (at most 100
  // entities), so a few hundred KiB at most, freed at RELEASE. In a
  // temporary file it would cost two pwrites per page changed.
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

  if (!options_.in_memory) {
    if (options_.check_at_open) {
      std::vector<std::string> problems;
      s = ListProblems(w->db, "PRAGMA quick_check(100)", &problems);
      if (!s.ok()) return s;
      if (!problems.empty()) {
        return Status::Corruption(path +
                                  " is damaged (PRAGMA quick_check): " + JoinProblems(problems));
      }
    }
    // From here on the connections' reports of damage reach this store.
    const char* file = sqlite3_db_filename(w->db, "main");
    std::lock_guard<std::mutex> lock(DamageMu());
    if (file != nullptr && *file != '\0' && StoresByFile().emplace(file, this).second) {
      damage_file_ = file;
    }
  }
  s = InitSchema(w);
  if (!s.ok()) return s;
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

void SqliteStore::NoteDamage(sqlite3* db, const std::string& what) {
  const char* file = db != nullptr ? sqlite3_db_filename(db, "main") : nullptr;
  if (file == nullptr || *file == '\0') return;
  std::lock_guard<std::mutex> lock(DamageMu());
  auto it = StoresByFile().find(std::string_view(file));
  if (it == StoresByFile().end()) return;
  SqliteStore* store = it->second;
  {
    std::lock_guard<std::mutex> damage_lock(store->damage_mu_);
    if (!store->damage_.empty()) return;
    store->damage_ = "the database file is damaged (" + what + ")";
  }
  store->damaged_.store(true, std::memory_order_release);
  if (store->options_.log) {
    store->options_.log("database file " + store->damage_file_ + " is damaged (" + what +
                        "): writes are refused from now on; see `cerulean check`");
  }
}

Status SqliteStore::Damaged() const {
  if (!damaged_.load(std::memory_order_acquire)) return Status::Ok();
  std::lock_guard<std::mutex> lock(damage_mu_);
  return Status::Corruption(damage_ + ": writes are refused");
}

bool SqliteStore::Healthy() {
  // Nothing outside the process can make an open store unusable but damage
  // to its file, which the connections report as they meet it (a full disk
  // belongs to the requests it meets). Asking SQLite would wait for a
  // reader, or in memory for the writer's lock behind a large write.
  return !damaged_.load(std::memory_order_acquire);
}

std::string SqliteStore::HealthProblem() {
  std::lock_guard<std::mutex> lock(damage_mu_);
  return damage_;
}

Status SqliteStore::CheckFile(const std::string& path, std::vector<std::string>* problems) {
  problems->clear();
  if (!std::filesystem::is_regular_file(path)) return Status::NotFound(path + ": no such file");
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr);
  Status s = rc == SQLITE_OK ? Status::Ok() : SqlStatus(db, rc, "open " + path);
  if (s.ok()) {
    sqlite3_busy_timeout(db, 0);
    s = ListProblems(db, "PRAGMA integrity_check(100)", problems);
    if (s.code() == StatusCode::kBusy) {
      s = Status::Busy(path + " is in use by another process (is a server running on it?)");
    }
  }
  sqlite3_close_v2(db);
  return s;
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
  stats.wal_truncations = wal_truncations_.load(std::memory_order_relaxed);
  stats.wal_truncations_refused = wal_truncations_refused_.load(std::memory_order_relaxed);
  stats.writer_cache_releases = writer_cache_releases_.load(std::memory_order_relaxed);
  stats.writer_cache_bytes_released = writer_cache_bytes_released_.load(std::memory_order_relaxed);
  const uint64_t waiting = writer_waiters_.load(std::memory_order_relaxed);
  stats.writer_waiters = (waiting & kRequestsWaitingMask) + ((waiting >> 16) & 0xffff);
  stats.scan_handovers = scan_handovers_.load(std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(readers_mu_);
  stats.readers_open = readers_opened_;
  stats.point_readers_open = point_readers_opened_;
  return stats;
}

}  // namespace cerulean::storage
