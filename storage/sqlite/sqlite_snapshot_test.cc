// Snapshots (Store::SaveSnapshot and friends), once per SqliteStore backend;
// the cases whose figures hold on every backend also on PostgreSQL
// (postgres_store_test.cc has its multi-node cases).
#include <doctest/doctest.h>

#include <map>
#include <string>
#include <type_traits>
#include <vector>

#include "storage/postgres/pg_test_util.h"
#include "storage/sqlite/sqlite_store.h"
#include "storage/test_util.h"

namespace cerulean::storage {
namespace {

using test::Insert;
using test::Op;
using test::TempDir;

struct FileStore {
  static constexpr bool kFile = true;
};
struct MemoryStore {
  static constexpr bool kFile = false;
};

template <typename B>
std::unique_ptr<SqliteStore> Open(const TempDir& dir) {
  SqliteStoreOptions options;
  options.fsync_commits = false;
  options.in_memory = !B::kFile;
  options.path = dir.path() + "/store.db";
  auto store = SqliteStore::Open(options);
  REQUIRE(store.ok());
  return std::move(*store);
}

// PostgresStore on the test database (CERULEAN_TEST_DATABASE); the case
// skips without one.
struct PostgresBackend {};

template <typename B>
auto OpenAny(const TempDir& dir) {
  if constexpr (std::is_same_v<B, PostgresBackend>) {
    return test::OpenPgTestStore();
  } else {
    return Open<B>(dir);
  }
}

// Everything a snapshot restores, as text: tables (as created) with their
// ACL and every entity's keys, timestamp and properties; service properties.
std::string Dump(Store& store, const std::string& account) {
  std::string out = "props=" + store.GetServiceProperties(account).value() + "\n";
  auto names = test::TableNames(store, account);
  REQUIRE(names.ok());
  for (const auto& t : *names) {
    out += "table " + t + " acl=" + store.GetTableAcl(account, t).value() + "\n";
    ScanResult r;
    ScanRequest all;
    all.limit = SIZE_MAX;
    REQUIRE(store.Scan(account, t, all, &r).ok());
    for (const auto& e : r.entities) {
      out += "  " + e.partition_key + "/" + e.row_key + " ts=" + std::to_string(e.timestamp);
      for (const auto& p : e.properties) out += " " + p.name + "=" + p.value.string();
      out += "\n";
    }
  }
  return out;
}

void Write(Store& store, const std::string& table, std::vector<WriteOp> ops) {
  ApplyResult result;
  ApplyError error;
  REQUIRE(store.Apply("acct", table, ops, &result, &error).ok());
}

Property Str(std::string name, std::string v) {
  return {std::move(name), Value::String(std::move(v))};
}

TEST_CASE_TEMPLATE("snapshot: restore brings back tables, entities, ETags, ACLs, properties", B,
                   FileStore, MemoryStore, PostgresBackend) {
  TempDir dir;
  auto store = OpenAny<B>(dir);
  if (!store) return;
  REQUIRE(store->CreateTable("acct", "Orders").ok());
  REQUIRE(store->CreateTable("acct", "kept").ok());
  REQUIRE(store->CreateTable("other", "Orders").ok());
  for (int i = 0; i < 50; ++i) {
    Write(*store, "Orders",
          {Insert("p" + std::to_string(i % 3), std::to_string(i), {Str("v", "a")})});
  }
  Write(*store, "kept", {Insert("k", "1", {Str("x", "y")})});
  REQUIRE(store->SetTableAcl("acct", "Orders", "<acl>1</acl>").ok());
  REQUIRE(store->SetServiceProperties("acct", "<props>1</props>").ok());
  const std::string before = Dump(*store, "acct");
  const std::string other_before = Dump(*store, "other");

  SnapshotInfo info;
  REQUIRE(store->SaveSnapshot("acct", "fixture", &info).ok());
  CHECK(info.name == "fixture");
  CHECK(info.tables == 2);
  CHECK(info.entities == 51);

  // Change everything.
  Write(*store, "Orders", {Op(WriteKind::kInsertOrReplace, "p0", "0", {Str("v", "changed")})});
  Write(*store, "Orders", {Op(WriteKind::kDelete, "p1", "1", {})});
  Write(*store, "Orders", {Insert("new", "1")});
  REQUIRE(store->DeleteTable("acct", "kept").ok());
  REQUIRE(store->CreateTable("acct", "Extra").ok());
  Write(*store, "Extra", {Insert("e", "1")});
  REQUIRE(store->SetTableAcl("acct", "Orders", "<acl>2</acl>").ok());
  REQUIRE(store->SetServiceProperties("acct", "<props>2</props>").ok());
  REQUIRE(Dump(*store, "acct") != before);

  RestoreStats stats;
  REQUIRE(store->RestoreSnapshot("acct", "fixture", &stats).ok());
  CHECK(Dump(*store, "acct") == before);
  CHECK(Dump(*store, "other") == other_before);
  CHECK(stats.tables_copied == 1);    // "kept", dropped since
  CHECK(stats.tables_patched == 1);   // "Orders": three rows written since
  CHECK(stats.entities_copied == 3);  // kept/1 and two of the Orders rows (one is only deleted)

  // Writes after a restore get timestamps above every restored one.
  Write(*store, "Orders", {Insert("after", "1")});
  auto after = store->GetEntity("acct", "Orders", "after", "1");
  REQUIRE(after.ok());
  auto restored = store->GetEntity("acct", "Orders", "p0", "0");
  REQUIRE(restored.ok());
  CHECK(after->timestamp > restored->timestamp);

  // Restoring again after changes restores the same state.
  REQUIRE(store->RestoreSnapshot("acct", "fixture", &stats).ok());
  CHECK(Dump(*store, "acct") == before);
}

TEST_CASE_TEMPLATE("snapshot: restore copies only the tables written since", B, FileStore,
                   MemoryStore) {
  TempDir dir;
  auto store = Open<B>(dir);
  for (const char* t : {"a", "b", "c"}) {
    REQUIRE(store->CreateTable("acct", t).ok());
    std::vector<WriteOp> ops;
    for (int i = 0; i < 100; ++i) ops.push_back(Insert("p", std::to_string(i)));
    Write(*store, t, ops);
  }
  REQUIRE(store->SaveSnapshot("acct", "s", nullptr).ok());
  const std::string saved = Dump(*store, "acct");

  RestoreStats stats;
  REQUIRE(store->RestoreSnapshot("acct", "s", &stats).ok());
  CHECK(stats.tables_kept == 3);
  CHECK(stats.tables_copied == 0);
  CHECK(stats.entities_copied == 0);

  Write(*store, "b", {Op(WriteKind::kDelete, "p", "5", {})});
  REQUIRE(store->SetTableAcl("acct", "c", "<x/>").ok());  // documents are always restored
  REQUIRE(store->RestoreSnapshot("acct", "s", &stats).ok());
  CHECK(stats.tables_kept == 2);
  CHECK(stats.tables_patched == 1);
  CHECK(stats.tables_copied == 0);
  CHECK(stats.entities_copied == 1);
  CHECK(Dump(*store, "acct") == saved);

  // Nothing written since: nothing to do.
  REQUIRE(store->RestoreSnapshot("acct", "s", &stats).ok());
  CHECK(stats.tables_kept == 3);
  CHECK(stats.entities_copied == 0);

  // A refused write changes nothing but may count as a write: the row is
  // put back, never left wrong.
  ApplyResult result;
  ApplyError error;
  CHECK(store->Apply("acct", "a", {Insert("p", "1")}, &result, &error).code() ==
        StatusCode::kAlreadyExists);
  REQUIRE(store->RestoreSnapshot("acct", "s", &stats).ok());
  CHECK(Dump(*store, "acct") == saved);

  // More rows written than a patch is worth: the table is copied whole.
  for (int b = 0; b < 11; ++b) {  // 1,100 keys
    std::vector<WriteOp> ops;
    for (int i = 0; i < 100; ++i) ops.push_back(Insert("q", std::to_string(b * 100 + i)));
    Write(*store, "a", ops);
  }
  REQUIRE(store->RestoreSnapshot("acct", "s", &stats).ok());
  CHECK(stats.tables_copied == 1);
  CHECK(stats.entities_copied == 100);
  CHECK(Dump(*store, "acct") == saved);

  // A table dropped and re-created under the same name is a new table.
  REQUIRE(store->DeleteTable("acct", "c").ok());
  REQUIRE(store->CreateTable("acct", "c").ok());
  REQUIRE(store->RestoreSnapshot("acct", "s", &stats).ok());
  CHECK(stats.tables_copied >= 1);
  CHECK(Dump(*store, "acct") == saved);
}

TEST_CASE_TEMPLATE("snapshot: rows put back by one snapshot's restore are put back by another's", B,
                   FileStore, MemoryStore, PostgresBackend) {
  TempDir dir;
  auto store = OpenAny<B>(dir);
  if (!store) return;
  REQUIRE(store->CreateTable("acct", "t").ok());
  Write(*store, "t", {Insert("p", "1", {Str("v", "one")})});
  REQUIRE(store->SaveSnapshot("acct", "a", nullptr).ok());
  const std::string at_a = Dump(*store, "acct");
  Write(*store, "t", {Op(WriteKind::kMerge, "p", "1", {Str("v", "two")})});
  Write(*store, "t", {Insert("p", "2")});
  REQUIRE(store->SaveSnapshot("acct", "b", nullptr).ok());
  const std::string at_b = Dump(*store, "acct");
  for (int round = 0; round < 3; ++round) {
    CAPTURE(round);
    RestoreStats stats;
    REQUIRE(store->RestoreSnapshot("acct", "a", &stats).ok());
    CHECK(stats.tables_copied == 0);
    CHECK(Dump(*store, "acct") == at_a);
    REQUIRE(store->RestoreSnapshot("acct", "b", &stats).ok());
    CHECK(stats.tables_copied == 0);
    CHECK(Dump(*store, "acct") == at_b);
    Write(*store, "t", {Insert("p", "3")});
  }
  // Deleting every snapshot stops the logging; a new one starts it again.
  REQUIRE(store->DeleteSnapshot("acct", "a").ok());
  REQUIRE(store->DeleteSnapshot("acct", "b").ok());
  Write(*store, "t", {Insert("p", "4")});
  REQUIRE(store->SaveSnapshot("acct", "c", nullptr).ok());
  const std::string at_c = Dump(*store, "acct");
  Write(*store, "t", {Op(WriteKind::kDelete, "p", "4", {})});
  RestoreStats stats;
  REQUIRE(store->RestoreSnapshot("acct", "c", &stats).ok());
  CHECK(stats.tables_patched == 1);
  CHECK(Dump(*store, "acct") == at_c);
}

TEST_CASE_TEMPLATE("snapshot: a table whose key log was cut is copied whole", B, FileStore,
                   MemoryStore) {
  TempDir dir;
  auto store = Open<B>(dir);
  REQUIRE(store->CreateTable("acct", "t").ok());
  Write(*store, "t", {Insert("p", "0")});
  REQUIRE(store->SaveSnapshot("acct", "s", nullptr).ok());
  const std::string saved = Dump(*store, "acct");
  // Ten keys, written often enough that the oldest writes leave the log.
  std::vector<WriteOp> ops;
  for (int i = 0; i < 10; ++i)
    ops.push_back(Op(WriteKind::kInsertOrReplace, "p", std::to_string(i), {}));
  for (int n = 0; n < 1700; ++n) Write(*store, "t", ops);
  RestoreStats stats;
  REQUIRE(store->RestoreSnapshot("acct", "s", &stats).ok());
  CHECK(stats.tables_copied == 1);
  CHECK(Dump(*store, "acct") == saved);
}

// A memory figure of the store's (Store::Gauges): `name` ("memory_bytes" or
// "memory_entries") of `structure`.
uint64_t Memory(const Store& store, const std::string& structure, const std::string& name) {
  for (const StoreGauge& g : store.Gauges()) {
    if (g.name == structure + "_" + name) return g.value;
  }
  FAIL("no gauge " << name << " of " << structure);
  return 0;
}

TEST_CASE_TEMPLATE("snapshot: the key log forgets dropped tables and reset accounts", B, FileStore,
                   MemoryStore) {
  TempDir dir;
  auto store = Open<B>(dir);
  REQUIRE(store->CreateTable("acct", "fixture").ok());
  Write(*store, "fixture", {Insert("p", "0", {Str("v", "saved")})});
  REQUIRE(store->SaveSnapshot("acct", "s", nullptr).ok());
  const std::string saved = Dump(*store, "acct");
  Write(*store, "fixture", {Insert("p", "1")});
  const uint64_t bytes = Memory(*store, "key_log", "memory_bytes");
  const uint64_t tables = Memory(*store, "write_counts", "memory_entries");
  CHECK(Memory(*store, "key_log", "memory_entries") == 1);
  CHECK(bytes > 0);

  // A suite's temporary tables, each filled and dropped while the snapshot
  // exists, and an account reset: none of their keys stays logged.
  for (int t = 0; t < 20; ++t) {
    const std::string name = "temp" + std::to_string(t);
    REQUIRE(store->CreateTable("acct", name).ok());
    for (int b = 0; b < 10; ++b) {
      std::vector<WriteOp> ops;
      for (int i = 0; i < 100; ++i) ops.push_back(Insert("p", std::to_string(b * 100 + i)));
      Write(*store, name, ops);
    }
    CHECK(Memory(*store, "key_log", "memory_entries") == 1 + 1000);
    CHECK(Memory(*store, "key_log", "memory_bytes") > bytes + 1000 * 8);
    REQUIRE(store->DeleteTable("acct", name).ok());
    CHECK(Memory(*store, "key_log", "memory_bytes") == bytes);
    CHECK(Memory(*store, "write_counts", "memory_entries") == tables);
  }
  for (const char* t : {"a", "b"}) {
    REQUIRE(store->CreateTable("other", t).ok());
    ApplyResult result;
    ApplyError error;
    REQUIRE(store->Apply("other", t, {Insert("p", "1"), Insert("p", "2")}, &result, &error).ok());
  }
  CHECK(Memory(*store, "key_log", "memory_entries") == 1 + 4);
  REQUIRE(store->ResetAccount("other").ok());
  CHECK(Memory(*store, "key_log", "memory_bytes") == bytes);
  CHECK(Memory(*store, "write_counts", "memory_entries") == tables);

  // A table the restore drops (created after the save) is forgotten too,
  // and the restore is exact.
  REQUIRE(store->CreateTable("acct", "later").ok());
  Write(*store, "later", {Insert("p", "1")});
  RestoreStats stats;
  REQUIRE(store->RestoreSnapshot("acct", "s", &stats).ok());
  CHECK(stats.tables_patched == 1);
  CHECK(Dump(*store, "acct") == saved);
  CHECK(Memory(*store, "write_counts", "memory_entries") == tables);

  // With no snapshot left, nothing is logged and the log's memory is freed.
  REQUIRE(store->DeleteSnapshot("acct", "s").ok());
  CHECK(Memory(*store, "key_log", "memory_bytes") == 0);
  CHECK(Memory(*store, "key_log", "memory_entries") == 0);
}

TEST_CASE("snapshot(memory): the key logs of all tables together stay within their bound") {
  TempDir dir;
  auto store = Open<MemoryStore>(dir);
  constexpr int kTables = 20;
  for (int t = 0; t < kTables; ++t) {
    const std::string name = "t" + std::to_string(t);
    REQUIRE(store->CreateTable("acct", name).ok());
    Write(*store, name, {Insert("p", "0")});
  }
  REQUIRE(store->SaveSnapshot("acct", "s", nullptr).ok());
  const std::string saved = Dump(*store, "acct");
  // 1,900 writes of 2 KiB keys per table: each log stays below its own bound
  // (4 MiB of keys) and holds 500 distinct keys (few enough to patch), and
  // together they would hold ~77 MiB.
  const std::string long_pk(1024, 'k');
  for (int t = 0; t < kTables; ++t) {
    const std::string name = "t" + std::to_string(t);
    for (int b = 0; b < 19; ++b) {
      std::vector<WriteOp> ops;
      for (int i = 0; i < 100; ++i) {
        std::string rk = std::to_string((b * 100 + i) % 500);
        ops.push_back(
            Op(WriteKind::kInsertOrReplace, long_pk, rk + std::string(1024 - rk.size(), 'r'), {}));
      }
      Write(*store, name, ops);
      REQUIRE(Memory(*store, "key_log", "memory_bytes") <= SqliteStore::kMaxKeyLogBytes);
    }
  }
  CHECK(Memory(*store, "key_log", "memory_bytes") > SqliteStore::kMaxKeyLogBytes / 2);
  // The tables whose logs were emptied are copied whole, the others patched:
  // either way the restore is exact.
  RestoreStats stats;
  REQUIRE(store->RestoreSnapshot("acct", "s", &stats).ok());
  CHECK(stats.tables_copied > 0);
  CHECK(stats.tables_patched > 0);
  CHECK(stats.tables_copied + stats.tables_patched == kTables);
  CHECK(Dump(*store, "acct") == saved);
}

TEST_CASE_TEMPLATE("snapshot: list, replace, delete, absent", B, FileStore, MemoryStore,
                   PostgresBackend) {
  TempDir dir;
  auto store = OpenAny<B>(dir);
  if (!store) return;
  REQUIRE(store->CreateTable("acct", "t").ok());
  Write(*store, "t", {Insert("p", "1")});
  REQUIRE(store->SaveSnapshot("acct", "two", nullptr).ok());
  Write(*store, "t", {Insert("p", "2")});
  REQUIRE(store->SaveSnapshot("acct", "one", nullptr).ok());
  REQUIRE(store->SaveSnapshot("acct", "two", nullptr).ok());  // replaced: now 2 rows

  std::vector<SnapshotInfo> list;
  REQUIRE(store->ListSnapshots("acct", &list).ok());
  REQUIRE(list.size() == 2);
  CHECK(list[0].name == "one");
  CHECK(list[1].name == "two");
  CHECK(list[1].entities == 2);
  CHECK(list[1].tables == 1);
  REQUIRE(store->ListSnapshots("nobody", &list).ok());
  CHECK(list.empty());

  CHECK(store->RestoreSnapshot("acct", "three", nullptr).code() == StatusCode::kNotFound);
  CHECK(store->RestoreSnapshot("nobody", "one", nullptr).code() == StatusCode::kNotFound);
  CHECK(store->DeleteSnapshot("acct", "three").code() == StatusCode::kNotFound);
  REQUIRE(store->DeleteSnapshot("acct", "one").ok());
  REQUIRE(store->ListSnapshots("acct", &list).ok());
  REQUIRE(list.size() == 1);

  // An account with no tables and no properties restores to empty.
  REQUIRE(store->SaveSnapshot("empty", "blank", nullptr).ok());
  REQUIRE(store->CreateTable("empty", "x").ok());
  REQUIRE(store->SetServiceProperties("empty", "<p/>").ok());
  REQUIRE(store->RestoreSnapshot("empty", "blank", nullptr).ok());
  CHECK(Dump(*store, "empty") == "props=\n");

  // ResetAccount leaves snapshots.
  REQUIRE(store->ResetAccount("acct").ok());
  REQUIRE(store->RestoreSnapshot("acct", "two", nullptr).ok());
  CHECK(store->GetEntity("acct", "t", "p", "2").ok());
}

TEST_CASE("snapshot(file): snapshots survive a restart, and so does what a restore may keep") {
  TempDir dir;
  std::string saved;
  {
    auto store = Open<FileStore>(dir);
    for (const char* t : {"t", "u"}) {
      REQUIRE(store->CreateTable("acct", t).ok());
      Write(*store, t, {Insert("p", "1", {Str("a", "b")})});
    }
    REQUIRE(store->SaveSnapshot("acct", "s", nullptr).ok());
    saved = Dump(*store, "acct");
    Write(*store, "u", {Insert("p", "2")});  // written in this incarnation, not after
  }
  RestoreStats stats;
  {
    auto store = Open<FileStore>(dir);
    REQUIRE(store->RestoreSnapshot("acct", "s", &stats).ok());
    CHECK(stats.tables_kept == 1);  // "t", unwritten across the clean restart
    CHECK(stats.tables_copied == 1);
    CHECK(Dump(*store, "acct") == saved);
    Write(*store, "t", {Insert("p", "3")});
  }
  auto store = Open<FileStore>(dir);
  REQUIRE(store->RestoreSnapshot("acct", "s", &stats).ok());
  CHECK(stats.tables_kept == 1);  // "u", as the last restore left it
  CHECK(stats.tables_copied == 1);
  CHECK(Dump(*store, "acct") == saved);
  REQUIRE(store->RestoreSnapshot("acct", "s", &stats).ok());
  CHECK(stats.tables_copied == 0);
}

}  // namespace
}  // namespace cerulean::storage
