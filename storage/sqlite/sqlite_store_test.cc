// The Store suite, run once per backend (SQLite file, SQLite in-memory,
// PostgreSQL when CERULEAN_TEST_DATABASE names a test database): tables,
// ACLs, service properties, accounts; and the SQLite store's own: opening,
// persistence, the in-memory database, one process per file.
#include "storage/sqlite/sqlite_store.h"

#include <doctest/doctest.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "storage/sqlite/sqlite_test_util.h"
#include "storage/sqlite/wal_vfs.h"

namespace cerulean::storage {
namespace {

TEST_CASE_TEMPLATE("store: tables", B, FileBackend, MemoryBackend, PostgresBackend) {
  TempDir dir;
  auto store = OpenStore<B>(dir);
  if (!store) return;  // no test database
  CHECK(store->Healthy());
  CHECK(store->GetTable("acct", "Missing").status().code() == StatusCode::kTableNotFound);
  REQUIRE(store->CreateTable("acct", "MyTable").ok());
  CHECK(store->CreateTable("acct", "mytable").code() == StatusCode::kTableAlreadyExists);
  CHECK(store->CreateTable("acct", "MYTABLE").code() == StatusCode::kTableAlreadyExists);
  auto name = store->GetTable("acct", "MYTABLE");
  REQUIRE(name.ok());
  CHECK(*name == "MyTable");
  // Accounts are separate namespaces.
  CHECK(store->GetTable("other", "MyTable").status().code() == StatusCode::kTableNotFound);
  REQUIRE(store->CreateTable("other", "MyTable").ok());

  // Ordinal name order: upper case before lower case.
  REQUIRE(store->CreateTable("acct", "beta").ok());
  REQUIRE(store->CreateTable("acct", "Alpha").ok());
  REQUIRE(store->CreateTable("acct", "Zed").ok());
  CHECK(TableNames(*store, "acct").value() ==
        std::vector<std::string>{"Alpha", "MyTable", "Zed", "beta"});
  CHECK(TableNames(*store, "acct", "N").value() == std::vector<std::string>{"Zed", "beta"});
  CHECK(TableNames(*store, "acct", "MyTable").value() ==
        std::vector<std::string>{"MyTable", "Zed", "beta"});
  CHECK(TableNames(*store, "nobody").value().empty());
  int visited = 0;
  REQUIRE(store
              ->ScanTables("acct", "",
                           [&](const std::string&) {
                             ++visited;
                             return visited < 2;
                           })
              .ok());
  CHECK(visited == 2);

  // Delete, case-insensitively; the name is free at once.
  REQUIRE(store->Apply("acct", "mytable", {Insert("p", "r")}, nullptr, nullptr).ok());
  REQUIRE(store->DeleteTable("acct", "mYtAbLe").ok());
  CHECK(store->GetTable("acct", "MyTable").status().code() == StatusCode::kTableNotFound);
  CHECK(store->DeleteTable("acct", "MyTable").code() == StatusCode::kTableNotFound);
  CHECK(store->GetEntity("acct", "MyTable", "p", "r").status().code() ==
        StatusCode::kTableNotFound);
  REQUIRE(store->CreateTable("acct", "mytable").ok());
  CHECK(*store->GetTable("acct", "MyTable") == "mytable");
  CHECK(store->GetEntity("acct", "MyTable", "p", "r").status().code() == StatusCode::kNotFound);
  CHECK(ScanAll(*store, "mytable", {}).empty());
  CHECK(store->GetTable("other", "MyTable").ok());
}

TEST_CASE_TEMPLATE("store: many tables page through ScanTables", B, FileBackend, MemoryBackend,
                   PostgresBackend) {
  TempDir dir;
  auto store = OpenStore<B>(dir);
  if (!store) return;  // no test database
  std::set<std::string> expected;
  for (int i = 0; i < 600; ++i) {
    std::string name = "t" + std::to_string(i * 7919 % 1000);
    REQUIRE(store->CreateTable("acct", name).ok());
    expected.insert(name);
  }
  std::vector<std::string> names;
  // The visitor may call into the store (no connection is held).
  REQUIRE(store
              ->ScanTables("acct", "",
                           [&](const std::string& n) {
                             names.push_back(n);
                             return store->GetTable("acct", n).ok();
                           })
              .ok());
  CHECK(names == std::vector<std::string>(expected.begin(), expected.end()));
}

TEST_CASE_TEMPLATE("store: ACL and service properties", B, FileBackend, MemoryBackend,
                   PostgresBackend) {
  TempDir dir;
  auto store = OpenStore<B>(dir);
  if (!store) return;  // no test database
  CHECK(store->GetTableAcl("acct", "t1").status().code() == StatusCode::kTableNotFound);
  CHECK(store->SetTableAcl("acct", "t1", "x").code() == StatusCode::kTableNotFound);
  REQUIRE(store->CreateTable("acct", "T1").ok());
  CHECK(*store->GetTableAcl("acct", "t1") == "");
  REQUIRE(store->SetTableAcl("acct", "t1", "<SignedIdentifiers/>").ok());
  CHECK(*store->GetTableAcl("acct", "T1") == "<SignedIdentifiers/>");

  CHECK(*store->GetServiceProperties("acct") == "");
  REQUIRE(store->SetServiceProperties("acct", "props-1").ok());
  REQUIRE(store->SetServiceProperties("acct", "props-2").ok());
  REQUIRE(store->SetServiceProperties("other", "other-props").ok());
  CHECK(*store->GetServiceProperties("acct") == "props-2");

  // A recreated table starts without an ACL.
  REQUIRE(store->DeleteTable("acct", "t1").ok());
  REQUIRE(store->CreateTable("acct", "t1").ok());
  CHECK(*store->GetTableAcl("acct", "t1") == "");
}

TEST_CASE_TEMPLATE("store: ResetAccount", B, FileBackend, MemoryBackend, PostgresBackend) {
  TempDir dir;
  auto store = OpenStore<B>(dir);
  if (!store) return;  // no test database
  for (const char* account : {"acct", "other"}) {
    REQUIRE(store->CreateTable(account, "t1").ok());
    REQUIRE(store->CreateTable(account, "t2").ok());
    REQUIRE(store->Apply(account, "t1", {Insert("p", "r")}, nullptr, nullptr).ok());
    REQUIRE(store->SetServiceProperties(account, "props").ok());
  }
  REQUIRE(store->ResetAccount("acct").ok());
  CHECK(TableNames(*store, "acct").value().empty());
  CHECK(*store->GetServiceProperties("acct") == "");
  CHECK(TableNames(*store, "other").value() == std::vector<std::string>{"t1", "t2"});
  CHECK(store->GetEntity("other", "t1", "p", "r").ok());
  CHECK(*store->GetServiceProperties("other") == "props");
  REQUIRE(store->CreateTable("acct", "t1").ok());
  CHECK(store->GetEntity("acct", "t1", "p", "r").status().code() == StatusCode::kNotFound);
  REQUIRE(store->ResetAccount("nobody").ok());
  // The reset account's rows are reclaimed in the background.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while ((*store->CountEntityRowsForTesting() != 1 || *store->CountPendingReapsForTesting() != 0) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  CHECK(*store->CountEntityRowsForTesting() == 1);
  CHECK(*store->CountPendingReapsForTesting() == 0);
}

TEST_CASE_TEMPLATE("store: GetUsage counts tables and live entities per account", B, FileBackend,
                   MemoryBackend, PostgresBackend) {
  TempDir dir;
  auto store = OpenStore<B>(dir);
  if (!store) return;  // no test database
  REQUIRE(store->CreateTable("acct", "t1").ok());
  REQUIRE(store->CreateTable("acct", "t2").ok());
  REQUIRE(store->CreateTable("other", "t1").ok());
  REQUIRE(store->Apply("acct", "t1", {Insert("p", "a"), Insert("p", "b")}, nullptr, nullptr).ok());
  REQUIRE(store->Apply("acct", "t2", {Insert("p", "a")}, nullptr, nullptr).ok());
  REQUIRE(store->Apply("other", "t1", {Insert("p", "a")}, nullptr, nullptr).ok());
  // A dropped table's rows no longer count, reaped or not.
  REQUIRE(store->DeleteTable("other", "t1").ok());
  std::vector<AccountUsage> usage;
  uint64_t bytes = 0;
  REQUIRE(store->GetUsage(&usage, &bytes).ok());
  REQUIRE(usage.size() == 1);
  CHECK(usage[0].account == "acct");
  CHECK(usage[0].tables == 2);
  CHECK(usage[0].entities == 3);
  CHECK((bytes > 0) == !std::is_same_v<B, MemoryBackend>);
}

TEST_CASE("store(file): data survives reopen") {
  TempDir dir;
  int64_t ts = 0;
  {
    auto store = OpenStore<FileBackend>(dir);
    REQUIRE(store->CreateTable("acct", "Persist").ok());
    REQUIRE(store->SetTableAcl("acct", "persist", "acl").ok());
    REQUIRE(store->SetServiceProperties("acct", "props").ok());
    ApplyResult res;
    REQUIRE(store
                ->Apply("acct", "persist", {Insert("p", "r", {{"v", Value::Double(-0.0)}})}, &res,
                        nullptr)
                .ok());
    ts = res.timestamps[0];
  }
  auto store = OpenStore<FileBackend>(dir);
  CHECK(*store->GetTable("acct", "PERSIST") == "Persist");
  CHECK(*store->GetTableAcl("acct", "persist") == "acl");
  CHECK(*store->GetServiceProperties("acct") == "props");
  auto e = store->GetEntity("acct", "persist", "p", "r");
  REQUIRE(e.ok());
  CHECK(e->timestamp == ts);
  CHECK(e->properties == std::vector<Property>{{"v", Value::Double(-0.0)}});
  // Timestamps keep increasing for the entity after a restart.
  ApplyResult res;
  REQUIRE(store->Apply("acct", "persist", {Op(WriteKind::kMerge, "p", "r", {}, ts)}, &res, nullptr)
              .ok());
  CHECK(res.timestamps[0] > ts);
}

TEST_CASE("store(file): corrupt rows are reported, not trusted") {
  TempDir dir;
  auto store = OpenStore<FileBackend>(dir);
  REQUIRE(store->CreateTable("acct", "t").ok());
  REQUIRE(store->Apply("acct", "t", {Insert("p", "r", {{"a", Value::Int32(1)}})}, nullptr, nullptr)
              .ok());
  {
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open((dir.path() + "/sub/dir/store.db").c_str(), &db) == SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    char* err = nullptr;
    int rc = sqlite3_exec(db, "UPDATE entities SET props = x'0101016109'", nullptr, nullptr, &err);
    CHECK_MESSAGE(rc == SQLITE_OK, (err ? err : ""));
    sqlite3_free(err);
    sqlite3_close(db);
  }
  CHECK(store->GetEntity("acct", "t", "p", "r").status().code() == StatusCode::kCorruption);
  ScanResult res;
  CHECK(store->Scan("acct", "t", {}, &res).code() == StatusCode::kCorruption);
  CHECK(store->Apply("acct", "t", {Op(WriteKind::kMerge, "p", "r", {})}, nullptr, nullptr).code() ==
        StatusCode::kCorruption);
  // Replacing the entity heals it.
  REQUIRE(store->Apply("acct", "t", {Op(WriteKind::kUpdate, "p", "r", {})}, nullptr, nullptr).ok());
  CHECK(store->GetEntity("acct", "t", "p", "r").ok());
}

TEST_CASE("store(memory): nothing touches the disk, not even a rollback journal") {
  // The in-memory store is SQLite's memdb VFS under a relative name: no
  // database, journal or temporary file may appear in the working directory.
  TempDir dir;
  const std::filesystem::path cwd = std::filesystem::current_path();
  std::filesystem::current_path(dir.path());
  {
    SqliteStoreOptions options = TestOptions();
    options.in_memory = true;
    auto opened = SqliteStore::Open(options);
    REQUIRE(opened.ok());
    auto store = std::move(opened).value();
    REQUIRE(store->CreateTable("acct", "t").ok());
    std::vector<WriteOp> batch;
    for (int i = 0; i < 200; ++i) {
      batch.push_back(
          Insert("p", "r" + std::to_string(i), {{"s", Value::String(std::string(500, 'x'))}}));
    }
    REQUIRE(store->Apply("acct", "t", batch, nullptr, nullptr).ok());
    // A refused Apply rolls back to its savepoint.
    ApplyError err;
    CHECK(
        store->Apply("acct", "t", {Insert("p", "new"), Insert("p", "r0")}, nullptr, &err).code() ==
        StatusCode::kAlreadyExists);
    CHECK(ScanAll(*store, "t", {}).size() == 200);
    CHECK(store->DeleteTable("acct", "t").ok());
    store->Flush();
  }
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    files.push_back(e.path().filename().string());
  }
  std::filesystem::current_path(cwd);
  CHECK(files.empty());
}

TEST_CASE("store(memory): a full store refuses the write that does not fit and stays usable") {
  SqliteStoreOptions options = TestOptions();
  options.in_memory = true;
  options.memory_limit_bytes = 1 << 20;
  auto opened = SqliteStore::Open(options);
  REQUIRE(opened.ok());
  auto store = std::move(opened).value();
  REQUIRE(store->CreateTable("acct", "t").ok());
  const std::string big(2000, 'x');
  int stored = 0;
  Status s;
  for (int b = 0; b < 100; ++b) {
    std::vector<WriteOp> batch;
    for (int i = 0; i < 20; ++i) {
      batch.push_back(
          Insert("p", "r" + std::to_string(1000 + b * 20 + i), {{"s", Value::String(big)}}));
    }
    s = store->Apply("acct", "t", batch, nullptr, nullptr);
    if (!s.ok()) break;
    stored += 20;
  }
  CHECK(s.code() == StatusCode::kIOError);
  CHECK(s.ToString().find("full") != std::string::npos);
  CHECK(stored >= 100);
  CHECK(stored * big.size() < size_t{1} << 20);
  // The refused batch wrote nothing; what was acknowledged is all there.
  CHECK(ScanAll(*store, "t", {}).size() == static_cast<size_t>(stored));
  CHECK(store->Healthy());
  // Deleting rows frees pages that the next writes reuse.
  std::vector<WriteOp> deletes;
  for (int i = 0; i < 100; ++i) {
    deletes.push_back(Op(WriteKind::kDelete, "p", "r" + std::to_string(1000 + i), {}));
  }
  REQUIRE(store->Apply("acct", "t", deletes, nullptr, nullptr).ok());
  CHECK(store
            ->Apply("acct", "t", {Insert("p", "again", {{"s", Value::String(big)}})}, nullptr,
                    nullptr)
            .ok());
  CHECK(ScanAll(*store, "t", {}).size() == static_cast<size_t>(stored - 100 + 1));
}

TEST_CASE("store: Open errors") {
  SqliteStoreOptions options = TestOptions();
  CHECK(SqliteStore::Open(options).status().code() == StatusCode::kInvalidArgument);
  options.path = "/proc/definitely/not/writable/store.db";
  CHECK_FALSE(SqliteStore::Open(options).ok());
  TempDir dir;
  {
    sqlite3* db = nullptr;
    std::string path = dir.path() + "/future.db";
    REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
    REQUIRE(sqlite3_exec(db, "PRAGMA user_version=99", nullptr, nullptr, nullptr) == SQLITE_OK);
    sqlite3_close(db);
    options.path = path;
    CHECK(SqliteStore::Open(options).status().code() == StatusCode::kCorruption);
  }
}

TEST_CASE("store(file): WAL journal and a key-clustered entity table") {
  TempDir dir;
  { auto store = OpenStore<FileBackend>(dir); }
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open((dir.path() + "/sub/dir/store.db").c_str(), &db) == SQLITE_OK);
  auto query = [&](const char* sql) {
    sqlite3_stmt* stmt = nullptr;
    std::string out;
    REQUIRE(sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr) == SQLITE_OK);
    if (sqlite3_step(stmt) == SQLITE_ROW) {
      out = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
    }
    sqlite3_finalize(stmt);
    return out;
  };
  CHECK(query("PRAGMA journal_mode") == "wal");
  std::string entities = query("SELECT sql FROM sqlite_master WHERE name = 'entities'");
  CHECK(entities.find("PRIMARY KEY(table_id, pk, rk)) WITHOUT ROWID") != std::string::npos);
  sqlite3_close(db);
}

// Forks before any store of this test exists (the child must not inherit
// threads holding locks); the child opens `path` when told through a pipe
// and exits with 0 if Open failed with kBusy, 1 if it succeeded, 2 otherwise.
pid_t ForkOpener(const std::string& path, int* go_fd) {
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    close(fds[1]);
    char c;
    if (read(fds[0], &c, 1) != 1) _exit(3);
    SqliteStoreOptions options = TestOptions();
    options.path = path;
    // Far longer than the test allows: a refusal that waited for the lock
    // would show.
    options.busy_timeout = std::chrono::minutes(2);
    auto store = SqliteStore::Open(options);
    _exit(store.ok() ? 1 : store.status().code() == StatusCode::kBusy ? 0 : 2);
  }
  close(fds[0]);
  *go_fd = fds[1];
  return pid;
}

int WaitOpener(pid_t pid, int go_fd) {
  REQUIRE(write(go_fd, "x", 1) == 1);
  close(go_fd);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  return WEXITSTATUS(status);
}

// A file store at `path` holding table acct/Held.
std::unique_ptr<SqliteStore> OpenHeldStore(const std::string& path) {
  SqliteStoreOptions options = TestOptions();
  options.path = path;
  auto store = SqliteStore::Open(options);
  REQUIRE(store.ok());
  REQUIRE(store.value()->CreateTable("acct", "Held").ok());
  return std::move(store).value();
}

TEST_CASE("a file store is the process's alone: another process's Open fails at once with kBusy") {
  TempDir dir;
  const std::string path = dir.path() + "/store.db";
  int go = -1;
  pid_t child = ForkOpener(path, &go);
  {
    auto store = OpenHeldStore(path);
    auto start = std::chrono::steady_clock::now();
    CHECK(WaitOpener(child, go) == 0);
    // No busy wait: the refusal does not sit out the opener's busy_timeout.
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(60));
  }
  // Closed: another process opens it and finds the data.
  child = ForkOpener(path, &go);
  CHECK(WaitOpener(child, go) == 1);
  SqliteStoreOptions options = TestOptions();
  options.path = path;
  auto store = SqliteStore::Open(options);
  REQUIRE(store.ok());
  CHECK(store.value()->GetTable("acct", "Held").ok());
}

TEST_CASE("a file store stays the process's alone when another connection to it closes") {
  // The WAL shim keeps a descriptor of the database file of its own
  // (wal_vfs.h). Closing any descriptor of a file drops every POSIX lock the
  // process holds on it, so that descriptor is shared and closed only with
  // the last file open on the path.
  TempDir dir;
  const std::string path = dir.path() + "/store.db";
  int go = -1;
  pid_t child = ForkOpener(path, &go);
  auto store = OpenHeldStore(path);
  sqlite3* extra = nullptr;
  REQUIRE(sqlite3_open_v2(path.c_str(), &extra, SQLITE_OPEN_READWRITE,
                          WalCoalescingVfs("unix-excl")) == SQLITE_OK);
  CHECK(sqlite3_exec(extra, "SELECT count(*) FROM sqlite_master", nullptr, nullptr, nullptr) ==
        SQLITE_OK);
  sqlite3_close(extra);
  CHECK(WaitOpener(child, go) == 0);
}

}  // namespace
}  // namespace cerulean::storage
