// Durability. kill -9 rounds: a child process writes through a file
// SqliteStore and reports each acknowledged Apply over a pipe; the parent
// kills it at a random moment, reopens the database and checks that every
// acknowledged write is there, complete (batches are atomic). Power loss
// cannot be simulated here, so a counting VFS checks instead that every
// commit fsyncs the WAL before it is acknowledged.
#include <doctest/doctest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <future>
#include <map>
#include <mutex>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "storage/sqlite/sqlite_store.h"
#include "storage/test_util.h"

namespace cerulean::storage {
namespace {

using test::Insert;
using test::Op;
using test::TempDir;

constexpr int kOpsPerBatch = 3;

std::string RowKey(int32_t seq, int j) { return std::to_string(seq) + "." + std::to_string(j); }

std::string JunkTable(int round) { return "junk" + std::to_string(round); }

// The child: writes batches forever, acknowledging each one after Apply
// returned, while its reaper deletes a dropped table. Never returns.
[[noreturn]] void RunWriter(const std::string& path, int round, int ack_fd) {
  SqliteStoreOptions options;
  options.path = path;
  options.reap_chunk_rows = 25;
  auto store = SqliteStore::Open(options);
  if (!store.ok()) _exit(2);
  Status s = (*store)->CreateTable("acct", "crash");
  if (!s.ok() && s.code() != StatusCode::kTableAlreadyExists) _exit(3);
  if (!(*store)->CreateTable("acct", JunkTable(round)).ok()) _exit(6);
  std::vector<WriteOp> junk;
  for (int i = 0; i < 4000; ++i) junk.push_back(Insert("j", std::to_string(i)));
  if (!(*store)->Apply("acct", JunkTable(round), junk, nullptr, nullptr).ok()) _exit(7);
  if (!(*store)->DeleteTable("acct", JunkTable(round)).ok()) _exit(8);
  std::string pk = "round" + std::to_string(round);
  for (int32_t seq = 0;; ++seq) {
    std::vector<WriteOp> ops;
    for (int j = 0; j < kOpsPerBatch; ++j) {
      ops.push_back(
          Insert(pk, RowKey(seq, j),
                 {{"seq", Value::Int32(seq)}, {"pad", Value::String(std::string(200, 'z'))}}));
    }
    // Rewrite an older entity too, so pages are updated in place as well.
    if (seq > 0) {
      ops.push_back(
          Op(WriteKind::kMerge, pk, RowKey(seq - 1, 0), {{"touched", Value::Boolean(true)}}));
    }
    if (!(*store)->Apply("acct", "crash", ops, nullptr, nullptr).ok()) _exit(4);
    if (write(ack_fd, &seq, sizeof seq) != static_cast<ssize_t>(sizeof seq)) _exit(5);
  }
}

TEST_CASE("store(file): every acknowledged write survives kill -9") {
  TempDir dir;
  REQUIRE_FALSE(dir.path().empty());
  const std::string path = dir.path() + "/crash.db";
  unsigned seed = static_cast<unsigned>(std::random_device{}());
  MESSAGE("seed " << seed);
  std::mt19937 rng(seed);

  for (int round = 0; round < 4; ++round) {
    CAPTURE(round);
    int fds[2];
    REQUIRE(pipe(fds) == 0);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      close(fds[0]);
      RunWriter(path, round, fds[1]);
    }
    close(fds[1]);

    // Let the child get some writes acknowledged, then kill it mid-stream.
    const int min_acks = 20 + static_cast<int>(rng() % 100);
    std::set<int32_t> acked;
    int32_t seq = 0;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (static_cast<int>(acked.size()) < min_acks &&
           std::chrono::steady_clock::now() < deadline) {
      ssize_t n = read(fds[0], &seq, sizeof seq);
      if (n != static_cast<ssize_t>(sizeof seq)) break;
      acked.insert(seq);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % 5000));
    kill(pid, SIGKILL);
    int wstatus = 0;
    REQUIRE(waitpid(pid, &wstatus, 0) == pid);
    CHECK_MESSAGE(WIFSIGNALED(wstatus), "writer exited early with status "
                                            << (WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1));
    // Acknowledgements still in the pipe were sent before the kill.
    ssize_t n;
    while ((n = read(fds[0], &seq, sizeof seq)) == static_cast<ssize_t>(sizeof seq)) {
      acked.insert(seq);
    }
    close(fds[0]);
    REQUIRE(acked.size() >= static_cast<size_t>(min_acks));
    MESSAGE("round " << round << ": " << acked.size() << " acknowledged batches");

    SqliteStoreOptions options;
    options.path = path;
    options.background_reaping = false;
    auto store = SqliteStore::Open(options);
    REQUIRE_MESSAGE(store.ok(), store.status().ToString());
    std::string pk = "round" + std::to_string(round);
    int missing = 0;
    for (int32_t s : acked) {
      for (int j = 0; j < kOpsPerBatch; ++j) {
        auto e = (*store)->GetEntity("acct", "crash", pk, RowKey(s, j));
        if (!e.ok()) {
          ++missing;
          continue;
        }
        CHECK(*e->Find("seq") == Value::Int32(s));
      }
      if (s > 0) {
        auto prev = (*store)->GetEntity("acct", "crash", pk, RowKey(s - 1, 0));
        if (!prev.ok() || prev->Find("touched") == nullptr) ++missing;
      }
    }
    CHECK(missing == 0);
    // Batches are all-or-nothing: every batch present is complete, including
    // its merge into the previous batch.
    ScanRequest req;
    req.ranges = {KeyRange{KeyBound{pk, std::nullopt, true}, KeyBound{pk, std::nullopt, true}}};
    req.limit = SIZE_MAX;
    ScanResult res;
    REQUIRE((*store)->Scan("acct", "crash", req, &res).ok());
    std::map<int32_t, int> rows_per_batch;
    std::set<int32_t> touched;
    for (const Entity& e : res.entities) {
      const Value* seq_value = e.Find("seq");
      REQUIRE(seq_value != nullptr);
      ++rows_per_batch[seq_value->int32()];
      if (e.Find("touched") != nullptr) touched.insert(seq_value->int32());
    }
    int32_t last = rows_per_batch.empty() ? -1 : rows_per_batch.rbegin()->first;
    CHECK(static_cast<size_t>(last + 1) == rows_per_batch.size());  // no gaps
    for (const auto& entry : rows_per_batch) {
      const int32_t batch = entry.first;  // doctest's lambdas take no structured binding (clang 14)
      const int rows = entry.second;
      CAPTURE(batch);
      CHECK(rows == kOpsPerBatch);
      CHECK((touched.count(batch) == 1) == (batch < last));
    }
    CHECK(rows_per_batch.size() >= acked.size());
    // The dropped table stays dropped, and reaping resumes where the killed
    // reaper stopped.
    CHECK((*store)->GetTable("acct", JunkTable(round)).status().code() ==
          StatusCode::kTableNotFound);
    MESSAGE("round " << round << ": killed with " << *(*store)->CountPendingReapsForTesting()
                     << " dropped tables being reaped");
    REQUIRE((*store)->ReapNowForTesting().ok());
    CHECK(*(*store)->CountPendingReapsForTesting() == 0);
  }
}

// A VFS that forwards to SQLite's default one and counts xSync calls on WAL
// files, to observe when commits reach stable storage, and which WAL writes
// a completed sync covers.
constexpr const char* kSyncCountingVfs = "cerulean_sync_counting";
std::atomic<int> wal_syncs{0};
std::atomic<int> wal_writes{0};         // completed xWrite calls on WAL files
std::atomic<int> wal_writes_synced{0};  // of those, how many a completed sync covers
std::atomic<int> file_reads{0};         // xRead calls on any file (database or WAL)
sqlite3_vfs* real_vfs = nullptr;

struct CountingFile {
  sqlite3_file base;  // must be first: SQLite sees this struct as a sqlite3_file
  bool is_wal;
  // The default VFS's file object lives right behind this struct.
  sqlite3_file* real() { return reinterpret_cast<sqlite3_file*>(this + 1); }
};

sqlite3_file* Real(sqlite3_file* f) { return reinterpret_cast<CountingFile*>(f)->real(); }
const sqlite3_io_methods* RealMethods(sqlite3_file* f) { return Real(f)->pMethods; }

int CountingSync(sqlite3_file* f, int flags) {
  bool wal = reinterpret_cast<CountingFile*>(f)->is_wal;
  int covered = wal_writes.load();  // writes completed before the sync began
  if (wal) ++wal_syncs;
  int rc = RealMethods(f)->xSync(Real(f), flags);
  if (wal && rc == SQLITE_OK) {
    int seen = wal_writes_synced.load();
    while (seen < covered && !wal_writes_synced.compare_exchange_weak(seen, covered)) {
    }
  }
  return rc;
}

const sqlite3_io_methods kCountingMethods = {
    3,
    [](sqlite3_file* f) { return RealMethods(f)->xClose(Real(f)); },
    [](sqlite3_file* f, void* buf, int n, sqlite3_int64 off) {
      ++file_reads;
      return RealMethods(f)->xRead(Real(f), buf, n, off);
    },
    [](sqlite3_file* f, const void* buf, int n, sqlite3_int64 off) {
      int rc = RealMethods(f)->xWrite(Real(f), buf, n, off);
      if (rc == SQLITE_OK && reinterpret_cast<CountingFile*>(f)->is_wal) ++wal_writes;
      return rc;
    },
    [](sqlite3_file* f, sqlite3_int64 size) { return RealMethods(f)->xTruncate(Real(f), size); },
    CountingSync,
    [](sqlite3_file* f, sqlite3_int64* size) { return RealMethods(f)->xFileSize(Real(f), size); },
    [](sqlite3_file* f, int lock) { return RealMethods(f)->xLock(Real(f), lock); },
    [](sqlite3_file* f, int lock) { return RealMethods(f)->xUnlock(Real(f), lock); },
    [](sqlite3_file* f, int* out) { return RealMethods(f)->xCheckReservedLock(Real(f), out); },
    [](sqlite3_file* f, int op, void* arg) {
      return RealMethods(f)->xFileControl(Real(f), op, arg);
    },
    [](sqlite3_file* f) { return RealMethods(f)->xSectorSize(Real(f)); },
    [](sqlite3_file* f) { return RealMethods(f)->xDeviceCharacteristics(Real(f)); },
    [](sqlite3_file* f, int region, int size, int extend, void volatile** out) {
      return RealMethods(f)->xShmMap(Real(f), region, size, extend, out);
    },
    [](sqlite3_file* f, int offset, int n, int flags) {
      return RealMethods(f)->xShmLock(Real(f), offset, n, flags);
    },
    [](sqlite3_file* f) { RealMethods(f)->xShmBarrier(Real(f)); },
    [](sqlite3_file* f, int del) { return RealMethods(f)->xShmUnmap(Real(f), del); },
    [](sqlite3_file* f, sqlite3_int64 off, int n, void** out) {
      return RealMethods(f)->xFetch(Real(f), off, n, out);
    },
    [](sqlite3_file* f, sqlite3_int64 off, void* p) {
      return RealMethods(f)->xUnfetch(Real(f), off, p);
    },
};

int CountingOpen(sqlite3_vfs*, const char* name, sqlite3_file* f, int flags, int* out_flags) {
  auto* file = reinterpret_cast<CountingFile*>(f);
  file->is_wal = (flags & SQLITE_OPEN_WAL) != 0;
  int rc = real_vfs->xOpen(real_vfs, name, file->real(), flags, out_flags);
  // SQLite calls xClose iff pMethods is set, even after a failed open.
  f->pMethods = file->real()->pMethods != nullptr ? &kCountingMethods : nullptr;
  return rc;
}

// Registers kSyncCountingVfs (not as the default). Idempotent.
void RegisterSyncCountingVfs() {
  static sqlite3_vfs vfs;
  static std::once_flag once;
  std::call_once(once, [] {
    real_vfs = sqlite3_vfs_find(nullptr);
    REQUIRE(real_vfs != nullptr);
    REQUIRE(real_vfs->iVersion >= 2);
    vfs.iVersion = 2;
    vfs.szOsFile = static_cast<int>(sizeof(CountingFile)) + real_vfs->szOsFile;
    vfs.mxPathname = real_vfs->mxPathname;
    vfs.zName = kSyncCountingVfs;
    vfs.xOpen = CountingOpen;
    vfs.xDelete = [](sqlite3_vfs*, const char* name, int sync_dir) {
      return real_vfs->xDelete(real_vfs, name, sync_dir);
    };
    vfs.xAccess = [](sqlite3_vfs*, const char* name, int flags, int* out) {
      return real_vfs->xAccess(real_vfs, name, flags, out);
    };
    vfs.xFullPathname = [](sqlite3_vfs*, const char* name, int n, char* out) {
      return real_vfs->xFullPathname(real_vfs, name, n, out);
    };
    vfs.xDlOpen = [](sqlite3_vfs*, const char* name) { return real_vfs->xDlOpen(real_vfs, name); };
    vfs.xDlError = [](sqlite3_vfs*, int n, char* out) { real_vfs->xDlError(real_vfs, n, out); };
    vfs.xDlSym = [](sqlite3_vfs*, void* handle, const char* sym) {
      return real_vfs->xDlSym(real_vfs, handle, sym);
    };
    vfs.xDlClose = [](sqlite3_vfs*, void* handle) { real_vfs->xDlClose(real_vfs, handle); };
    vfs.xRandomness = [](sqlite3_vfs*, int n, char* out) {
      return real_vfs->xRandomness(real_vfs, n, out);
    };
    vfs.xSleep = [](sqlite3_vfs*, int us) { return real_vfs->xSleep(real_vfs, us); };
    vfs.xCurrentTime = [](sqlite3_vfs*, double* out) {
      return real_vfs->xCurrentTime(real_vfs, out);
    };
    vfs.xGetLastError = [](sqlite3_vfs*, int n, char* out) {
      return real_vfs->xGetLastError(real_vfs, n, out);
    };
    vfs.xCurrentTimeInt64 = [](sqlite3_vfs*, sqlite3_int64* out) {
      return real_vfs->xCurrentTimeInt64(real_vfs, out);
    };
    REQUIRE(sqlite3_vfs_register(&vfs, /*makeDflt=*/0) == SQLITE_OK);
  });
}

// Options for a store in `dir` named `file`, without background reaping;
// through kSyncCountingVfs when `counted`.
SqliteStoreOptions StoreOptions(const TempDir& dir, const std::string& file, bool counted) {
  REQUIRE_FALSE(dir.path().empty());
  SqliteStoreOptions options;
  options.path = dir.path() + "/" + file;
  options.background_reaping = false;
  if (counted) {
    RegisterSyncCountingVfs();
    options.vfs = kSyncCountingVfs;
  }
  return options;
}

TEST_CASE("store(file): every acknowledged commit has fsynced the WAL") {
  TempDir dir;
  SqliteStoreOptions options = StoreOptions(dir, "sync.db", /*counted=*/true);
  options.reap_chunk_rows = 50;

  SUBCASE("fsync_commits (the default): one sync or more per commit") {
    auto store = SqliteStore::Open(options);
    REQUIRE_MESSAGE(store.ok(), store.status().ToString());
    int before = wal_syncs;
    REQUIRE((*store)->CreateTable("acct", "t").ok());
    CHECK(wal_syncs > before);
    for (int i = 0; i < 20; ++i) {
      CAPTURE(i);
      before = wal_syncs;
      REQUIRE((*store)
                  ->Apply("acct", "t",
                          {Insert("p", std::to_string(i)), Insert("q", "x" + std::to_string(i))},
                          nullptr, nullptr)
                  .ok());
      CHECK(wal_syncs > before);
      // Acknowledged only once a sync that began after every WAL write so
      // far (this commit's included) has completed.
      CHECK(wal_writes_synced == wal_writes);
    }
    // The same through ApplyAsync: the callback is the acknowledgement.
    for (int i = 0; i < 20; ++i) {
      CAPTURE(i);
      std::promise<std::pair<bool, bool>> acked;
      (*store)->ApplyAsync("acct", "t", {Insert("a", std::to_string(i))}, [&](ApplyOutcome out) {
        acked.set_value({out.status.ok(), wal_writes_synced == wal_writes});
      });
      auto [ok, synced] = acked.get_future().get();
      CHECK(ok);
      CHECK(synced);
    }
    // Many queued at once (groups committed while others sync): answered
    // in the order queued, each once a sync covering its commit is done.
    {
      std::mutex mu;
      std::vector<int> answered;
      int wrong = 0;
      std::promise<void> all;
      constexpr int kQueued = 300;
      for (int i = 0; i < kQueued; ++i) {
        const int writes_before = wal_writes;
        (*store)->ApplyAsync("acct", "t", {Insert("m", std::to_string(i))},
                             [&, i, writes_before](ApplyOutcome out) {
                               std::lock_guard<std::mutex> lock(mu);
                               if (!out.status.ok() || wal_writes_synced <= writes_before) ++wrong;
                               answered.push_back(i);
                               if (answered.size() == kQueued) all.set_value();
                             });
      }
      all.get_future().wait();
      std::lock_guard<std::mutex> lock(mu);
      CHECK(wrong == 0);
      std::vector<int> expected(kQueued);
      for (int i = 0; i < kQueued; ++i) expected[i] = i;
      CHECK(answered == expected);
    }
    before = wal_syncs;
    REQUIRE((*store)->DeleteTable("acct", "t").ok());
    CHECK(wal_syncs > before);

    // Reaping a dropped table does not fsync each chunk (a lost chunk is
    // reaped again), and commits are durable again afterwards.
    REQUIRE((*store)->CreateTable("acct", "junk").ok());
    std::vector<WriteOp> junk;
    for (int i = 0; i < 2000; ++i) junk.push_back(Insert("j", std::to_string(i)));
    REQUIRE((*store)->Apply("acct", "junk", junk, nullptr, nullptr).ok());
    REQUIRE((*store)->DeleteTable("acct", "junk").ok());
    before = wal_syncs;
    REQUIRE((*store)->ReapNowForTesting().ok());  // 40 chunks
    CHECK(wal_syncs - before < 10);
    REQUIRE(*(*store)->CountEntityRowsForTesting() == 0);
    before = wal_syncs;
    REQUIRE((*store)->CreateTable("acct", "after").ok());
    CHECK(wal_syncs > before);
    before = wal_syncs;
    REQUIRE((*store)->Apply("acct", "after", {Insert("p", "r")}, nullptr, nullptr).ok());
    CHECK(wal_syncs > before);
  }

  SUBCASE("without fsync_commits, commits do not sync (the counter sees the difference)") {
    options.fsync_commits = false;
    auto store = SqliteStore::Open(options);
    REQUIRE_MESSAGE(store.ok(), store.status().ToString());
    REQUIRE((*store)->CreateTable("acct", "t").ok());
    int before = wal_syncs;
    for (int i = 0; i < 20; ++i) {
      REQUIRE(
          (*store)->Apply("acct", "t", {Insert("p", std::to_string(i))}, nullptr, nullptr).ok());
    }
    CHECK(wal_syncs - before < 20);
    // The data is still all there for readers of this process.
    for (int i = 0; i < 20; ++i)
      CHECK((*store)->GetEntity("acct", "t", "p", std::to_string(i)).ok());
  }
}

// A bulk load of 100-entity batches changes ~100 pages a batch and cycles through more
// leaf pages than SQLite's default 2 MiB page cache holds: each page the
// cache had lost came through a pread (SqliteStoreOptions::
// writer_cache_bytes). Here 1,000 rows of 2 KB (each with an overflow page:
// ~5 MiB of pages) are rewritten in random order; the WAL stays well below
// the checkpoint trigger (SqliteStoreOptions::wal_checkpoint), so no checkpoint reads it and every
// read counted is the writer's, however the threads are scheduled.
TEST_CASE("store(file): the writer's page cache keeps the pages it rewrites") {
  TempDir dir;
  SqliteStoreOptions options = StoreOptions(dir, "cache.db", /*counted=*/true);
  options.fsync_commits = false;
  options.writer_cache_idle_release = std::chrono::milliseconds(0);  // none mid-test
  int64_t cache_bytes = 0;
  SUBCASE("the default, 16 MiB") { cache_bytes = options.writer_cache_bytes; }
  SUBCASE("1 MiB: the counter sees the misses") { cache_bytes = int64_t{1} << 20; }
  options.writer_cache_bytes = cache_bytes;
  CAPTURE(cache_bytes);
  auto store = SqliteStore::Open(options);
  REQUIRE_MESSAGE(store.ok(), store.status().ToString());
  REQUIRE((*store)->CreateTable("acct", "t").ok());

  constexpr int kRows = 1000;
  auto row = [](int i, char fill) {
    char rk[16];
    std::snprintf(rk, sizeof rk, "r%05d", i);
    return Op(WriteKind::kInsertOrReplace, "p", rk,
              {{"Data", Value::String(std::string(2000, fill))}});
  };
  std::vector<int> order(kRows);
  std::iota(order.begin(), order.end(), 0);
  for (int at = 0; at < kRows; at += 100) {
    std::vector<WriteOp> ops;
    for (int i = at; i < at + 100; ++i) ops.push_back(row(i, 'a'));
    REQUIRE((*store)->Apply("acct", "t", ops, nullptr, nullptr).ok());
  }
  std::shuffle(order.begin(), order.end(), std::mt19937(7));
  int before = file_reads;
  for (int at = 0; at < kRows; at += 100) {
    std::vector<WriteOp> ops;
    for (int k = at; k < at + 100; ++k) ops.push_back(row(order[k], 'b'));
    REQUIRE((*store)->Apply("acct", "t", ops, nullptr, nullptr).ok());
  }
  int reads = file_reads - before;
  CAPTURE(reads);
  REQUIRE((*store)->CheckpointerIdleForTesting());  // none asked for
  const SqliteStoreStats stats = (*store)->GetStats();
  REQUIRE(stats.checkpoints_background == 0);
  REQUIRE(stats.checkpoints_writer == 0);
  if (cache_bytes >= int64_t{8} << 20) {
    CHECK(reads < 20);
  } else {
    CHECK(reads > 200);
  }
  auto got = (*store)->GetEntity("acct", "t", "p", "r00876");
  REQUIRE(got.ok());
  CHECK(got->properties.at(0).value.view().bytes == std::string(2000, 'b'));
}

// In WAL mode a connection's own page cache is emptied whenever another
// connection has committed since its last read; the shared page cache
// (SqliteStoreOptions::shared_page_cache_bytes) keeps the database file's
// pages for the next read all the same.
TEST_CASE("store(file): point reads after another connection's commit come from the shared cache") {
  TempDir dir;
  SqliteStoreOptions options = StoreOptions(dir, "shared.db", /*counted=*/true);
  options.fsync_commits = false;
  int64_t shared_bytes = 0;
  SUBCASE("the default") { shared_bytes = options.shared_page_cache_bytes; }
  SUBCASE("none: the counter sees the reads") { shared_bytes = 0; }
  options.shared_page_cache_bytes = shared_bytes;
  CAPTURE(shared_bytes);
  constexpr int kRows = 1000;
  auto key = [](int i) {
    char rk[16];
    std::snprintf(rk, sizeof rk, "r%05d", i);
    return std::string(rk);
  };
  {
    // Written, then closed: the rows are in the database file, not the WAL.
    auto store = SqliteStore::Open(options);
    REQUIRE_MESSAGE(store.ok(), store.status().ToString());
    REQUIRE((*store)->CreateTable("acct", "t").ok());
    REQUIRE((*store)->CreateTable("acct", "other").ok());
    for (int at = 0; at < kRows; at += 100) {
      std::vector<WriteOp> ops;
      for (int i = at; i < at + 100; ++i) {
        ops.push_back(Op(WriteKind::kInsertOrReplace, "p", key(i),
                         {{"Data", Value::String(std::string(2000, 'a'))}}));
      }
      REQUIRE((*store)->Apply("acct", "t", ops, nullptr, nullptr).ok());
    }
  }
  auto store = SqliteStore::Open(options);
  REQUIRE_MESSAGE(store.ok(), store.status().ToString());
  auto read_all = [&] {
    for (int i = 0; i < kRows; ++i) REQUIRE((*store)->GetEntity("acct", "t", "p", key(i)).ok());
  };
  read_all();
  int reads = 0;
  for (int round = 0; round < 3; ++round) {
    REQUIRE((*store)
                ->Apply("acct", "other", {Insert("q", std::to_string(round))}, nullptr, nullptr)
                .ok());
    const int before = file_reads;
    read_all();
    reads += file_reads - before;
  }
  MESSAGE("file reads " << reads << " with a shared cache of " << shared_bytes << " bytes");
  if (shared_bytes > 0) {
    CHECK(reads < 30);
  } else {
    CHECK(reads > 1000);  // ~500 pages of rows, three times
  }
}

TEST_CASE("store(file): the writer's page cache is emptied once writes stop") {
  TempDir dir;
  SqliteStoreOptions options = StoreOptions(dir, "idle.db", /*counted=*/false);
  options.fsync_commits = false;
  // Long beside the 10 ms pauses between the writes below, so that only a
  // stall of the whole machine could pass for the writes having stopped.
  options.writer_cache_idle_release = std::chrono::seconds(1);
  auto store = SqliteStore::Open(options);
  REQUIRE_MESSAGE(store.ok(), store.status().ToString());
  REQUIRE((*store)->CreateTable("acct", "t").ok());
  auto releases_after = [&](uint64_t seen) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while ((*store)->GetStats().writer_cache_releases == seen &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return (*store)->GetStats();
  };
  // Writes with pauses shorter than the idle time keep the cache; the
  // first release comes after the last of them, holding all ~3 MiB (more
  // than SQLite's default 2 MiB cache could).
  SqliteStoreStats before = releases_after(0);  // CreateTable's release
  CHECK(before.writer_cache_releases == 1);
  for (int at = 0; at < 1500; at += 100) {
    std::vector<WriteOp> ops;
    for (int i = at; i < at + 100; ++i) {
      ops.push_back(Insert("p", std::to_string(100000 + i),
                           {{"Data", Value::String(std::string(2000, 'x'))}}));
    }
    REQUIRE((*store)->Apply("acct", "t", ops, nullptr, nullptr).ok());
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  SqliteStoreStats after = releases_after(before.writer_cache_releases);
  CHECK(after.writer_cache_releases == before.writer_cache_releases + 1);
  CHECK(after.writer_cache_bytes_released - before.writer_cache_bytes_released > uint64_t{2} << 20);
  // No writes, no further release (longer than the idle time).
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  CHECK((*store)->GetStats().writer_cache_releases == after.writer_cache_releases);
  // The data is all there, and writing works as before.
  CHECK((*store)->GetEntity("acct", "t", "p", "101499").ok());
  REQUIRE((*store)->Apply("acct", "t", {Insert("p", "again")}, nullptr, nullptr).ok());
  uint64_t released = releases_after(after.writer_cache_releases).writer_cache_releases;
  CHECK(released == after.writer_cache_releases + 1);
  // So do writes outside the committer's groups (tables, the reaper).
  REQUIRE((*store)->CreateTable("acct", "u").ok());
  CHECK(releases_after(released).writer_cache_releases == released + 1);
}

}  // namespace
}  // namespace cerulean::storage
