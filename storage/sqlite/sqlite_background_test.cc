// The Store suite (see sqlite_store_test.cc): the work a store does in the
// background, reclaiming dropped tables and (file stores) checkpointing the
// WAL.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "storage/sqlite/sqlite_store.h"
#include "storage/sqlite/sqlite_test_util.h"

namespace cerulean::storage {
namespace {

TEST_CASE_TEMPLATE("store: DeleteTable returns at once and rows are reaped", B, FileBackend,
                   MemoryBackend, PostgresBackend) {
  TempDir dir;
  auto store = OpenStore<B>(dir);
  if (!store) return;  // no test database
  REQUIRE(store->CreateTable("acct", "big").ok());
  REQUIRE(store->CreateTable("acct", "keep").ok());
  REQUIRE(store->Apply("acct", "keep", {Insert("p", "r")}, nullptr, nullptr).ok());
  constexpr int kRows = 5000;
  for (int batch = 0; batch < kRows / 1000; ++batch) {
    std::vector<WriteOp> ops;
    for (int i = 0; i < 1000; ++i) {
      ops.push_back(Insert("p" + std::to_string(batch), std::to_string(i),
                           {{"payload", Value::String(std::string(40, 'x'))}}));
    }
    REQUIRE(store->Apply("acct", "big", ops, nullptr, nullptr).ok());
  }
  REQUIRE(*store->CountEntityRowsForTesting() == kRows + 1);

  auto t0 = std::chrono::steady_clock::now();
  REQUIRE(store->DeleteTable("acct", "big").ok());
  auto elapsed = std::chrono::steady_clock::now() - t0;
  MESSAGE(
      "DeleteTable of " << kRows << " rows took "
                        << std::chrono::duration_cast<std::chrono::microseconds>(elapsed).count()
                        << " us");
  // No timing assertion here (machines vary); "DeleteTable does the same
  // work for any table size" checks the cost structurally.
  REQUIRE(store->CreateTable("acct", "BIG").ok());
  CHECK(ScanAll(*store, "big", {}).empty());
  // Writers proceed while the reaper works.
  REQUIRE(store->Apply("acct", "big", {Insert("p0", "0")}, nullptr, nullptr).ok());

  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while ((*store->CountEntityRowsForTesting() != 2 || *store->CountPendingReapsForTesting() != 0) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  CHECK(*store->CountEntityRowsForTesting() == 2);
  CHECK(*store->CountPendingReapsForTesting() == 0);
  CHECK(store->GetEntity("acct", "keep", "p", "r").ok());
  CHECK(ScanAll(*store, "big", {}).size() == 1);
}

TEST_CASE_TEMPLATE("store: DeleteTable does the same work for any table size", B, FileBackend,
                   MemoryBackend) {
  TempDir dir;
  auto store = OpenStore<B>(dir, NoReaper());
  // "big" is created last: its id is the highest, the one a table created
  // next would get if ids were reused.
  for (const char* name : {"warmup", "small", "keep", "big"}) {
    REQUIRE(store->CreateTable("acct", name).ok());
  }
  InsertRows(*store, "warmup", "p", 0, 10);
  InsertRows(*store, "small", "p", 0, 10);
  InsertRows(*store, "big", "p", 0, 20000);
  InsertRows(*store, "keep", "p", 0, 10);
  auto drop = [&](const std::string& table) {
    return WorkOf(*store, [&] { REQUIRE(store->DeleteTable("acct", table).ok()); });
  };
  drop("warmup");
  SqliteStoreStats small = drop("small");
  SqliteStoreStats big = drop("big");
  MESSAGE("DeleteTable: " << small.vm_steps << " VM steps for 10 rows, " << big.vm_steps
                          << " for 20000");
  CHECK(big.statements_run == small.statements_run);
  CHECK(big.statements_run <= 5);
  // Deleting or even reading each row would cost several steps per row.
  CHECK(big.vm_steps <= small.vm_steps + 10);
  // Nothing was reclaimed yet, and nothing shows through.
  CHECK(*store->CountEntityRowsForTesting() == 20030);
  CHECK(*store->CountPendingReapsForTesting() == 3);
  CHECK(store->GetTable("acct", "big").status().code() == StatusCode::kTableNotFound);
  REQUIRE(store->CreateTable("acct", "BIG").ok());
  CHECK(ScanAll(*store, "big", {}).empty());
  CHECK(store->GetEntity("acct", "big", "p", "r00005").status().code() == StatusCode::kNotFound);
  REQUIRE(store->Apply("acct", "big", {Insert("p", "r00005")}, nullptr, nullptr).ok());
  CHECK(ScanAll(*store, "big", {}).size() == 1);

  REQUIRE(store->ReapNowForTesting().ok());
  CHECK(*store->CountPendingReapsForTesting() == 0);
  CHECK(*store->CountEntityRowsForTesting() == 11);
  CHECK(ScanAll(*store, "keep", {}).size() == 10);
  CHECK(ScanAll(*store, "big", {}).size() == 1);
}

TEST_CASE_TEMPLATE("store: reaping costs the same per chunk for any table size", B, FileBackend,
                   MemoryBackend) {
  TempDir dir;
  SqliteStoreOptions options = NoReaper();
  options.reap_chunk_rows = 100;
  auto store = OpenStore<B>(dir, options);
  auto reap = [&](const std::string& table, int rows) {
    REQUIRE(store->CreateTable("acct", table).ok());
    InsertRows(*store, table, "p", 0, rows);
    REQUIRE(store->DeleteTable("acct", table).ok());
    SqliteStoreStats work = WorkOf(*store, [&] { REQUIRE(store->ReapNowForTesting().ok()); });
    CHECK(*store->CountEntityRowsForTesting() == 0);
    return work;
  };
  reap("warmup", 100);
  SqliteStoreStats small = reap("small", 2000);
  SqliteStoreStats big = reap("big", 8000);
  MESSAGE("reaping: " << small.vm_steps << " VM steps for 2000 rows, " << big.vm_steps
                      << " for 8000");
  // Four times the rows in chunks of 100: four times the work (plus one
  // statement round per chunk), not sixteen as if each chunk rescanned what
  // was left.
  CHECK(big.statements_run <= 4 * small.statements_run + 10);
  CHECK(big.vm_steps <= 5 * small.vm_steps);
}

TEST_CASE("store(file): reaping resumes after a restart") {
  TempDir dir;
  SqliteStoreOptions no_reaper = TestOptions();
  no_reaper.background_reaping = false;
  {
    auto store = OpenStore<FileBackend>(dir, no_reaper);
    REQUIRE(store->CreateTable("acct", "t").ok());
    std::vector<WriteOp> ops;
    for (int i = 0; i < 5000; ++i) ops.push_back(Insert("p", std::to_string(i)));
    REQUIRE(store->Apply("acct", "t", ops, nullptr, nullptr).ok());
    REQUIRE(store->DeleteTable("acct", "t").ok());
    REQUIRE(store->CreateTable("acct", "t").ok());
    REQUIRE(store->Apply("acct", "t", {Insert("p", "new")}, nullptr, nullptr).ok());
    CHECK(*store->CountEntityRowsForTesting() == 5001);
    CHECK(*store->CountPendingReapsForTesting() == 1);
  }
  SqliteStoreOptions small_chunks = TestOptions();
  small_chunks.reap_chunk_rows = 300;
  auto store = OpenStore<FileBackend>(dir, small_chunks);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (*store->CountPendingReapsForTesting() != 0 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK(*store->CountPendingReapsForTesting() == 0);
  CHECK(*store->CountEntityRowsForTesting() == 1);
  CHECK(Keys(ScanAll(*store, "t", {})) == std::vector<std::string>{"p/new"});
}

TEST_CASE("store(file): the destructor stops a busy reaper") {
  // One row per chunk, and the reaper pauses at least 1 ms between chunks:
  // reaping 8,000 rows takes at least 8 s, so the store is destroyed while
  // its reaper is busy, and must not wait for it to finish.
  TempDir dir;
  SqliteStoreOptions tiny_chunks = TestOptions();
  tiny_chunks.reap_chunk_rows = 1;
  auto store = OpenStore<FileBackend>(dir, tiny_chunks);
  REQUIRE(store->CreateTable("acct", "t").ok());
  std::vector<WriteOp> ops;
  for (int i = 0; i < 8000; ++i) ops.push_back(Insert("p", std::to_string(i)));
  REQUIRE(store->Apply("acct", "t", ops, nullptr, nullptr).ok());
  REQUIRE(store->DeleteTable("acct", "t").ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  store.reset();
  {
    // Stopped part-way: the table is still pending, some rows left.
    auto reopened = OpenStore<FileBackend>(dir, NoReaper());
    CHECK(*reopened->CountPendingReapsForTesting() == 1);
    CHECK(*reopened->CountEntityRowsForTesting() > 0);
  }
  // What was left is finished by the next open.
  store = OpenStore<FileBackend>(dir);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (*store->CountEntityRowsForTesting() != 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK(*store->CountEntityRowsForTesting() == 0);
}

TEST_CASE("store(file): the checkpointer copies the WAL into the database in the background") {
  // Entities of about one WAL page each, enough to take the WAL past the
  // checkpointer's trigger and short of the hard limit at which the writer
  // copies it itself (both read from the store's options). The database
  // file grows only when pages are copied into it.
  TempDir dir;
  const SqliteStoreOptions options = TestOptions();
  const WalCheckpointLimits& limits = options.wal_checkpoint;
  REQUIRE(limits.trigger_pages < limits.hard_limit_pages);
  auto store = OpenStore<FileBackend>(dir, options);
  REQUIRE(store->CreateTable("acct", "wal").ok());
  const std::string db = dir.path() + "/sub/dir/store.db";
  const auto initial = std::filesystem::file_size(db);
  const std::string filler(3000, 'x');  // about one page per entity
  constexpr int kBatch = 100;
  const int pages = limits.trigger_pages + (limits.hard_limit_pages - limits.trigger_pages) / 4;
  const int batches = pages / kBatch;
  for (int b = 0; b < batches; ++b) {
    std::vector<WriteOp> ops;
    for (int i = 0; i < kBatch; ++i) {
      ops.push_back(Insert("p", std::to_string(b * kBatch + i), {{"v", Value::String(filler)}}));
    }
    REQUIRE(store->Apply("acct", "wal", ops, nullptr, nullptr).ok());
  }
  // A pass copies at least the trigger's frames (4 KiB pages), most of them
  // distinct pages (one entity each): the file grows by half of that at
  // least, and the checkpointer counts the pass. Bounded generously: the
  // pass runs whenever the checkpointer gets a core.
  const std::uintmax_t copied = initial + std::uintmax_t{4096} * limits.trigger_pages / 2;
  std::uintmax_t size = initial;
  uint64_t passes = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while ((size < copied || passes == 0) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    size = std::filesystem::file_size(db);
    passes = store->GetStats().checkpoints_background;
  }
  CHECK(size >= copied);
  CHECK(passes >= 1);
}

TEST_CASE("store(file): under steady small writes the WAL keeps rewinding") {
  // Single commits of about one page each, one after another as a busy
  // server's are: each checkpointer pass finds the writer a few commits
  // further on, and the WAL can rewind only once every frame is copied. The
  // writer copies those last frames itself (wal_checkpoint.h), so the WAL
  // rewinds again and again instead of growing. How many passes a rewind
  // takes depends on how the threads are scheduled; the planner's decisions
  // are tested on their own in wal_checkpoint_test.cc.
  TempDir dir;
  auto store = OpenStore<FileBackend>(dir);
  REQUIRE(store->CreateTable("acct", "wal").ok());
  const std::string filler(3000, 'x');
  SqliteStoreStats stats;
  for (int i = 0; i < 60000 && stats.wal_rewinds < 3; ++i) {
    REQUIRE(store
                ->Apply("acct", "wal",
                        {Insert("p" + std::to_string(i % 100), std::to_string(i),
                                {{"v", Value::String(filler)}})},
                        nullptr, nullptr)
                .ok());
    if (i % 100 == 0) stats = store->GetStats();
  }
  stats = store->GetStats();
  CHECK(stats.wal_rewinds >= 3);
  MESSAGE("rewinds " << stats.wal_rewinds << ", passes " << stats.checkpoints_background
                     << ", writer copies " << stats.checkpoints_writer);
}

TEST_CASE("store(file): once writes stop, the WAL is copied for the next write to rewind it") {
  // A load's last commits land while the checkpointer's pass runs, past the
  // frames that pass copies. Were they left for the next write, that write
  // (a Delete Table after a bulk load, say) would copy them itself, on its
  // request path. The checkpointer copies them once no commit has come for a
  // moment (checkpoints_idle), so the next write only rewinds the WAL.
  // Whether a load ends that way depends on how the threads were scheduled
  // (the WAL may have rewound mid-load and ended below the trigger), so
  // loads run until three have; each is then checked.
  TempDir dir;
  SqliteStoreOptions options = TestOptions();
  // Not truncated meanwhile: the write after a pause is to rewind it.
  options.wal_truncate_idle_after = std::chrono::hours(1);
  auto store = OpenStore<FileBackend>(dir, options);
  REQUIRE(store->CreateTable("acct", "wal").ok());
  const std::string filler(3000, 'x');  // about one page per entity
  int key = 0;
  int checked = 0;
  for (int round = 0; round < 30 && checked < 3; ++round) {
    CAPTURE(round);
    // Past the frames that start a pass by half as many again, committed
    // meanwhile.
    const int batches = options.wal_checkpoint.trigger_pages * 3 / 2 / 100;
    for (int b = 0; b < batches; ++b) {
      std::vector<WriteOp> ops;
      for (int i = 0; i < 100; ++i) {
        ops.push_back(Insert("p", std::to_string(key++), {{"v", Value::String(filler)}}));
      }
      REQUIRE(store->Apply("acct", "wal", ops, nullptr, nullptr).ok());
    }
    // An idle pass counted from here on copies what the last commit left.
    const uint64_t idle_passes = store->GetStats().checkpoints_idle;
    // Until the checkpointer has done all it will do without another
    // commit (its passes, and the one once writes have stopped).
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (!store->CheckpointerIdleForTesting() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    REQUIRE(store->CheckpointerIdleForTesting());
    const SqliteStoreStats before = store->GetStats();
    REQUIRE(store->Apply("acct", "wal", {Insert("q", std::to_string(round), {})}, nullptr, nullptr)
                .ok());
    const SqliteStoreStats after = store->GetStats();
    if (before.checkpoints_idle == idle_passes) continue;  // no pass left the last frames
    ++checked;
    CHECK(after.checkpoints_writer == before.checkpoints_writer);
    CHECK(after.wal_rewinds == before.wal_rewinds + 1);
  }
  CHECK(checked == 3);
}

// Polls `done` every 5 ms for up to two minutes (the checkpointer runs
// whenever it gets a core); true iff it held.
bool WaitFor(const std::function<bool()>& done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(2);
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

std::uintmax_t FileSize(const std::string& path) {
  std::error_code ec;
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  return ec ? 0 : size;
}

// `count` entities of about one page each, in batches of 100, from key
// `from`; returns the largest size the WAL file `wal` had after a batch.
std::uintmax_t LoadPages(Store& store, const std::string& table, int from, int count,
                         const std::string& wal) {
  const std::string filler(3000, 'x');
  std::uintmax_t largest = 0;
  for (int b = from; b < from + count; b += 100) {
    std::vector<WriteOp> ops;
    for (int i = b; i < std::min(b + 100, from + count); ++i) {
      ops.push_back(Insert("p", std::to_string(100000 + i), {{"v", Value::String(filler)}}));
    }
    REQUIRE(store.Apply("acct", table, ops, nullptr, nullptr).ok());
    largest = std::max(largest, FileSize(wal));
  }
  return largest;
}

TEST_CASE("store(file): once writes stop, the WAL file is truncated") {
  TempDir dir;
  SqliteStoreOptions options = TestOptions();
  options.wal_truncate_idle_after = std::chrono::milliseconds(100);
  auto store = OpenStore<FileBackend>(dir, options);
  const std::string wal = dir.path() + "/sub/dir/store.db-wal";
  REQUIRE(store->CreateTable("acct", "t").ok());
  // ~3,000 pages: below the checkpointer's trigger, so nothing but the
  // truncation copies them.
  CHECK(LoadPages(*store, "t", 0, 3000, wal) >= 8 * 1024 * 1024);
  // The file is truncated before the truncation is counted.
  REQUIRE(WaitFor([&] { return store->GetStats().wal_truncations >= 1 && FileSize(wal) == 0; }));
  CHECK(ScanAll(*store, "t", {}).size() == 3000);
  CHECK(store->GetEntity("acct", "t", "p", "102999").ok());

  // The WAL starts again from its first frame; a larger load than before
  // goes through the background checkpointer and is truncated again.
  const uint64_t truncations = store->GetStats().wal_truncations;
  const uint64_t passes = store->GetStats().checkpoints_background;
  CHECK(LoadPages(*store, "t", 3000, 6000, wal) > 0);
  REQUIRE(WaitFor(
      [&] { return store->GetStats().wal_truncations > truncations && FileSize(wal) == 0; }));
  CHECK(store->GetStats().checkpoints_background > passes);
  CHECK(ScanAll(*store, "t", {}).size() == 9000);
  REQUIRE(store->Apply("acct", "t", {Insert("q", "after")}, nullptr, nullptr).ok());
  CHECK(store->GetEntity("acct", "t", "q", "after").ok());
}

TEST_CASE("store(file): a reader on the WAL holds its truncation off, blocking nothing") {
  TempDir dir;
  SqliteStoreOptions options = TestOptions();
  options.wal_truncate_idle_after = std::chrono::milliseconds(50);
  auto store = OpenStore<FileBackend>(dir, options);
  const std::string wal = dir.path() + "/sub/dir/store.db-wal";
  REQUIRE(store->CreateTable("acct", "t").ok());
  REQUIRE(store->Apply("acct", "t", {Insert("a", "first")}, nullptr, nullptr).ok());

  // A scan that stops at its first row holds its read transaction open.
  std::promise<void> reading, release;
  std::shared_future<void> released = release.get_future().share();
  std::thread reader([&] {
    std::optional<EntityKey> next;
    bool first = true;
    Status s = store->ScanRows(
        "acct", "t", ScanRequest{},
        [&](EntityRow&) {
          if (first) {
            first = false;
            reading.set_value();
            released.wait();
          }
          return Status::Ok();
        },
        &next);
    CHECK(s.ok());
  });
  reading.get_future().wait();
  // Committed after the reader's snapshot: no checkpoint can copy these
  // frames while it reads, so neither can the WAL be truncated. Writes and
  // other reads go on.
  CHECK(LoadPages(*store, "t", 0, 2000, wal) >= 4 * 1024 * 1024);
  const SqliteStoreStats before = store->GetStats();
  REQUIRE(WaitFor([&] {
    return store->GetStats().wal_truncations_refused >= before.wal_truncations_refused + 2;
  }));
  CHECK(store->GetStats().wal_truncations == before.wal_truncations);
  CHECK(FileSize(wal) > 0);
  CHECK(store->GetEntity("acct", "t", "p", "101999").ok());
  REQUIRE(store->Apply("acct", "t", {Insert("b", "during")}, nullptr, nullptr).ok());

  release.set_value();
  reader.join();
  REQUIRE(WaitFor([&] {
    return store->GetStats().wal_truncations > before.wal_truncations && FileSize(wal) == 0;
  }));
  CHECK(ScanAll(*store, "t", {}).size() == 2002);
}

TEST_CASE("store(file): writes before and after a truncated WAL survive kill -9") {
  TempDir dir;
  const std::string path = dir.path() + "/store.db";
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    // Durable writes (every acknowledged write synced), a truncation, more
    // durable writes; then it waits to be killed.
    close(fds[0]);
    SqliteStoreOptions options;
    options.path = path;
    options.wal_truncate_idle_after = std::chrono::milliseconds(50);
    auto opened = SqliteStore::Open(options);
    if (!opened.ok()) _exit(2);
    SqliteStore& store = **opened;
    if (!store.CreateTable("acct", "t").ok()) _exit(3);
    const std::string filler(3000, 'x');
    auto load = [&](int from, int to) {
      for (int b = from; b < to; b += 100) {
        std::vector<WriteOp> ops;
        for (int i = b; i < b + 100; ++i) {
          ops.push_back(Insert("p", std::to_string(100000 + i), {{"v", Value::String(filler)}}));
        }
        if (!store.Apply("acct", "t", ops, nullptr, nullptr).ok()) _exit(4);
      }
    };
    load(0, 2000);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(2);
    while (store.GetStats().wal_truncations == 0 || FileSize(path + "-wal") != 0) {
      if (std::chrono::steady_clock::now() >= deadline) _exit(5);
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    load(2000, 2500);
    const char done = 1;
    if (write(fds[1], &done, 1) != 1) _exit(6);
    for (;;) pause();
  }
  close(fds[1]);
  char done = 0;
  const bool acknowledged = read(fds[0], &done, 1) == 1;
  close(fds[0]);
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  REQUIRE_MESSAGE(acknowledged, "the writer exited with " << WEXITSTATUS(status));
  SqliteStoreOptions options = TestOptions();
  options.path = path;
  auto reopened = SqliteStore::Open(options);
  REQUIRE(reopened.ok());
  std::vector<Entity> rows = ScanAll(**reopened, "t", {});
  REQUIRE(rows.size() == 2500);
  CHECK(rows.front().row_key == "100000");
  CHECK(rows.back().row_key == "102499");
}

}  // namespace
}  // namespace cerulean::storage
