// WalCoalescingVfs: a WAL transaction reaches the file in few writes, and
// everything SQLite reads back (its own spilled frames, other connections'
// snapshots, the database after reopening) is what was written.
#include "storage/sqlite/wal_vfs.h"

#include <doctest/doctest.h>
#include <sqlite3.h>
#include <sys/types.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "storage/test_util.h"

namespace cerulean::storage {
namespace {

using test::TempDir;

// Counts the unix VFS's pwrite calls on files whose path ends in "-wal", by
// replacing its system call (restored by the destructor).
class WalWriteCounter {
 public:
  WalWriteCounter() {
    vfs_ = sqlite3_vfs_find("unix");
    REQUIRE(vfs_ != nullptr);
    real_ = reinterpret_cast<Pwrite64>(vfs_->xGetSystemCall(vfs_, "pwrite64"));
    const bool found = real_ != nullptr;
    REQUIRE(found);
    count_ = 0;
    REQUIRE(vfs_->xSetSystemCall(
                vfs_, "pwrite64",
                reinterpret_cast<sqlite3_syscall_ptr>(&WalWriteCounter::Counting)) == SQLITE_OK);
  }
  ~WalWriteCounter() {
    vfs_->xSetSystemCall(vfs_, "pwrite64", reinterpret_cast<sqlite3_syscall_ptr>(real_));
  }
  static int count() { return count_; }

 private:
  using Pwrite64 = ssize_t (*)(int, const void*, size_t, off_t);
  static ssize_t Counting(int fd, const void* buf, size_t n, off_t offset) {
    char path[512];
    ssize_t len = readlink(("/proc/self/fd/" + std::to_string(fd)).c_str(), path, sizeof path);
    if (len > 4 && std::string_view(path, static_cast<size_t>(len)).ends_with("-wal")) ++count_;
    return real_(fd, buf, n, offset);
  }
  static inline Pwrite64 real_ = nullptr;
  static inline int count_ = 0;
  sqlite3_vfs* vfs_ = nullptr;
};

sqlite3* OpenDb(const std::string& path, const char* vfs) {
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, vfs);
  REQUIRE(rc == SQLITE_OK);
  return db;
}

void Exec(sqlite3* db, const std::string& sql) {
  char* error = nullptr;
  int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error);
  INFO(sql << ": " << (error ? error : ""));
  sqlite3_free(error);
  REQUIRE(rc == SQLITE_OK);
}

int64_t QueryInt(sqlite3* db, const char* sql) {
  sqlite3_stmt* stmt = nullptr;
  REQUIRE(sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr) == SQLITE_OK);
  REQUIRE(sqlite3_step(stmt) == SQLITE_ROW);
  int64_t v = sqlite3_column_int64(stmt, 0);
  sqlite3_finalize(stmt);
  return v;
}

std::string QueryText(sqlite3* db, const char* sql) {
  sqlite3_stmt* stmt = nullptr;
  REQUIRE(sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr) == SQLITE_OK);
  REQUIRE(sqlite3_step(stmt) == SQLITE_ROW);
  std::string v(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0)));
  sqlite3_finalize(stmt);
  return v;
}

// Inserts `rows` rows of 3,000 bytes each in one transaction.
void InsertRows(sqlite3* db, int first, int rows) {
  Exec(db, "BEGIN");
  for (int i = first; i < first + rows; ++i) {
    Exec(db, "INSERT INTO t VALUES(" + std::to_string(i) + ", zeroblob(3000))");
  }
  Exec(db, "COMMIT");
}

TEST_CASE("wal vfs: a transaction's frames reach the WAL in a few writes") {
  TempDir dir;
  const char* vfs = WalCoalescingVfs("unix");
  REQUIRE(vfs != nullptr);
  CHECK(std::string(WalCoalescingVfs("unix")) == vfs);  // registered once
  sqlite3* db = OpenDb(dir.path() + "/a.db", vfs);
  Exec(db, "PRAGMA journal_mode=WAL");
  Exec(db, "PRAGMA synchronous=NORMAL");
  Exec(db, "CREATE TABLE t(k INTEGER PRIMARY KEY, v BLOB)");
  {
    WalWriteCounter counter;
    InsertRows(db, 0, 100);  // ~100 pages: 200 writes without the shim
    // ~410 KB in writes of at most 120 KiB.
    CHECK(WalWriteCounter::count() >= 1);
    CHECK(WalWriteCounter::count() <= 5);
  }
  sqlite3_close(db);
}

TEST_CASE("wal vfs: spilled frames, other connections and a reopened database read back") {
  TempDir dir;
  const std::string path = dir.path() + "/b.db";
  const char* vfs = WalCoalescingVfs(nullptr);
  REQUIRE(vfs != nullptr);
  sqlite3* writer = OpenDb(path, vfs);
  Exec(writer, "PRAGMA journal_mode=WAL");
  Exec(writer, "PRAGMA synchronous=NORMAL");
  Exec(writer, "PRAGMA wal_autocheckpoint=0");
  // A cache of 20 pages: a transaction of ~2,000 pages spills frames to the
  // WAL and reads them back before it commits; past 4 MiB the gathered
  // frames are written early.
  Exec(writer, "PRAGMA cache_size=20");
  Exec(writer, "CREATE TABLE t(k INTEGER PRIMARY KEY, v BLOB)");
  sqlite3* reader = OpenDb(path, vfs);
  CHECK(QueryInt(reader, "SELECT count(*) FROM t") == 0);

  InsertRows(writer, 0, 2000);
  CHECK(QueryInt(writer, "SELECT count(*) FROM t") == 2000);
  CHECK(QueryInt(reader, "SELECT count(*) FROM t") == 2000);
  CHECK(QueryInt(reader, "SELECT sum(length(v)) FROM t") == 2000 * 3000);

  // A rolled-back transaction's frames never show, and the next commit
  // overwrites them.
  Exec(writer, "BEGIN");
  for (int i = 2000; i < 2300; ++i) {
    Exec(writer, "INSERT INTO t VALUES(" + std::to_string(i) + ", zeroblob(3000))");
  }
  Exec(writer, "ROLLBACK");
  InsertRows(writer, 5000, 10);
  CHECK(QueryInt(reader, "SELECT count(*) FROM t") == 2010);
  CHECK(QueryInt(reader, "SELECT count(*) FROM t WHERE k >= 2000 AND k < 2300") == 0);

  // A checkpoint through another connection copies committed frames only.
  sqlite3* checkpointer = OpenDb(path, vfs);
  CHECK(QueryInt(checkpointer, "SELECT count(*) FROM t") == 2010);
  int log = -1, copied = -1;
  CHECK(sqlite3_wal_checkpoint_v2(checkpointer, nullptr, SQLITE_CHECKPOINT_PASSIVE, &log,
                                  &copied) == SQLITE_OK);
  CHECK(log > 0);
  CHECK(copied == log);
  InsertRows(writer, 6000, 5);
  sqlite3_close(checkpointer);
  sqlite3_close(reader);
  sqlite3_close(writer);

  // Without the shim, after a restart: every committed row.
  sqlite3* plain = OpenDb(path, nullptr);
  CHECK(QueryInt(plain, "SELECT count(*) FROM t") == 2015);
  CHECK(QueryText(plain, "PRAGMA integrity_check") == "ok");
  sqlite3_close(plain);
}

TEST_CASE("wal vfs: a checkpoint's database writes reach the device in pieces") {
  TempDir dir;
  const std::string path = dir.path() + "/p.db";
  const char* vfs = WalCoalescingVfs("unix");
  sqlite3* db = OpenDb(path, vfs);
  Exec(db, "PRAGMA journal_mode=WAL");
  Exec(db, "PRAGMA wal_autocheckpoint=0");
  Exec(db, "CREATE TABLE t(k INTEGER PRIMARY KEY, v BLOB)");
  InsertRows(db, 0, 2000);  // ~6 MB of pages in the WAL
  const uint64_t before = PacedWritebacksForTesting();
  int log = -1, copied = -1;
  REQUIRE(sqlite3_wal_checkpoint_v2(db, nullptr, SQLITE_CHECKPOINT_PASSIVE, &log, &copied) ==
          SQLITE_OK);
  CHECK(copied == log);
  // One push per 256 KiB copied: ~6 MB is ~23 of them.
  CHECK(PacedWritebacksForTesting() - before >= 16);
  sqlite3_close(db);
  sqlite3* plain = OpenDb(path, nullptr);
  CHECK(QueryInt(plain, "SELECT count(*) FROM t") == 2000);
  CHECK(QueryText(plain, "PRAGMA integrity_check") == "ok");
  sqlite3_close(plain);
}

size_t OpenDescriptors() {
  size_t n = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    ++n;
  }
  return n;
}

TEST_CASE("wal vfs: a database's pacing descriptor is shared, and closed with its last file") {
  TempDir dir;
  const std::string path = dir.path() + "/x.db";
  const char* vfs = WalCoalescingVfs("unix");
  const size_t descriptors = OpenDescriptors();
  sqlite3* a = OpenDb(path, vfs);
  Exec(a, "CREATE TABLE t(k)");
  const size_t with_one = OpenDescriptors();
  CHECK(with_one == descriptors + 2);  // SQLite's and the shim's
  sqlite3* b = OpenDb(path, vfs);
  CHECK(QueryInt(b, "SELECT count(*) FROM t") == 0);
  CHECK(OpenDescriptors() == with_one + 1);  // SQLite's only
  sqlite3_close(b);
  sqlite3_close(a);
  CHECK(OpenDescriptors() == descriptors);
}

TEST_CASE("wal vfs: the base file of a shim file, and of any other") {
  TempDir dir;
  sqlite3* db = OpenDb(dir.path() + "/c.db", WalCoalescingVfs(nullptr));
  Exec(db, "PRAGMA journal_mode=WAL");
  Exec(db, "CREATE TABLE t(k)");
  sqlite3_file* wal = nullptr;
  REQUIRE(sqlite3_file_control(db, "main", SQLITE_FCNTL_JOURNAL_POINTER, &wal) == SQLITE_OK);
  REQUIRE(wal != nullptr);
  sqlite3_file* base = WalBaseFile(wal);
  CHECK(base != wal);
  CHECK(WalBaseFile(base) == base);
  CHECK(base->pMethods->xSync(base, SQLITE_SYNC_NORMAL) == SQLITE_OK);
  CHECK(WalCoalescingVfs("no-such-vfs") == nullptr);
  sqlite3_close(db);
}

}  // namespace
}  // namespace cerulean::storage
