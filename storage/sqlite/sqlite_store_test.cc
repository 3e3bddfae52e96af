// The Store suite, run once per backend (SQLite file, SQLite in-memory,
// PostgreSQL when CERULEAN_TEST_DATABASE names a test database).
#include "storage/sqlite/sqlite_store.h"

#include <doctest/doctest.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <vector>

#include "storage/codec.h"
#include "storage/postgres/pg_test_util.h"
#include "storage/test_util.h"
#include "storage/sqlite/wal_vfs.h"

namespace cerulean::storage {
namespace {

using test::Ent;
using test::Insert;
using test::Keys;
using test::Op;
using test::TempDir;

struct FileBackend {
  static constexpr bool kFile = true;
};
struct MemoryBackend {
  static constexpr bool kFile = false;
};
// PostgresStore on CERULEAN_TEST_DATABASE (storage/postgres/pg_test_util.h); its
// cases skip without one.
struct PostgresBackend {
  static constexpr bool kFile = false;
};

// Options for this suite: no fsync per commit, which only costs time here;
// sqlite_store_crash_test.cc covers durability with the default.
SqliteStoreOptions TestOptions() {
  SqliteStoreOptions options;
  options.fsync_commits = false;
  return options;
}

// The store of backend B; null for PostgresBackend without a test database.
template <typename B>
auto OpenStore(const TempDir& dir, SqliteStoreOptions options = TestOptions()) {
  if constexpr (std::is_same_v<B, PostgresBackend>) {
    return test::OpenPgTestStore();
  } else {
    options.in_memory = !B::kFile;
    options.path = dir.path() + "/sub/dir/store.db";
    auto store = SqliteStore::Open(options);
    REQUIRE_MESSAGE(store.ok(), store.status().ToString());
    return std::move(store).value();
  }
}

std::vector<std::string> TableNames(Store& store, const std::string& account,
                                    const std::string& start = "") {
  std::vector<std::string> names;
  Status s = store.ScanTables(account, start, [&](const std::string& n) {
    names.push_back(n);
    return true;
  });
  REQUIRE(s.ok());
  return names;
}

// Scans everything the request admits, following continuations.
std::vector<Entity> ScanAll(Store& store, const std::string& table, ScanRequest req) {
  std::vector<Entity> all;
  for (int pages = 0; pages < 100000; ++pages) {
    ScanResult res;
    Status s = store.Scan("acct", table, req, &res);
    REQUIRE_MESSAGE(s.ok(), s.ToString());
    all.insert(all.end(), res.entities.begin(), res.entities.end());
    if (!res.next) return all;
    req.start = res.next;
  }
  FAIL("too many pages");
  return all;
}

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
  CHECK(TableNames(*store, "acct") == std::vector<std::string>{"Alpha", "MyTable", "Zed", "beta"});
  CHECK(TableNames(*store, "acct", "N") == std::vector<std::string>{"Zed", "beta"});
  CHECK(TableNames(*store, "acct", "MyTable") ==
        std::vector<std::string>{"MyTable", "Zed", "beta"});
  CHECK(TableNames(*store, "nobody").empty());
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
  CHECK(TableNames(*store, "acct").empty());
  CHECK(*store->GetServiceProperties("acct") == "");
  CHECK(TableNames(*store, "other") == std::vector<std::string>{"t1", "t2"});
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

TEST_CASE_TEMPLATE("store: GetEntityRow visits the stored row, undecoded, once", B, FileBackend,
                   MemoryBackend, PostgresBackend) {
  TempDir dir;
  auto store = OpenStore<B>(dir);
  if (!store) return;  // no test database
  REQUIRE(store->CreateTable("acct", "t").ok());
  ApplyResult result;
  REQUIRE(store->Apply("acct", "t", {Insert("p", "r", {{"v", Value::Int32(7)}})}, &result, nullptr)
              .ok());
  int visits = 0;
  std::string props;
  Status s = store->GetEntityRow("acct", "T", "p", "r", [&](EntityRow& row) {
    ++visits;
    CHECK(row.partition_key == "p");
    CHECK(row.row_key == "r");
    CHECK(row.timestamp == result.timestamps[0]);
    CHECK(row.decoded == nullptr);
    props.assign(row.properties);
    return Status::Ok();
  });
  REQUIRE(s.ok());
  CHECK(visits == 1);
  std::vector<Property> decoded;
  REQUIRE(DecodeProperties(props, &decoded).ok());
  REQUIRE(decoded.size() == 1);
  CHECK(decoded[0].name == "v");
  CHECK(decoded[0].value.int32() == 7);
  // The visitor's status is the call's.
  CHECK(store
            ->GetEntityRow("acct", "t", "p", "r",
                           [](EntityRow&) { return Status::Corruption("bad row"); })
            .code() == StatusCode::kCorruption);
  // No row, no visit.
  auto never = [&](EntityRow&) {
    ++visits;
    return Status::Ok();
  };
  CHECK(store->GetEntityRow("acct", "t", "p", "missing", never).code() == StatusCode::kNotFound);
  CHECK(store->GetEntityRow("acct", "nope", "p", "r", never).code() == StatusCode::kTableNotFound);
  CHECK(visits == 1);
}

TEST_CASE_TEMPLATE("store: write kinds and conditions", B, FileBackend, MemoryBackend,
                   PostgresBackend) {
  TempDir dir;
  auto store = OpenStore<B>(dir);
  if (!store) return;  // no test database
  REQUIRE(store->CreateTable("acct", "t").ok());
  ApplyResult res;
  ApplyError err;
  auto apply = [&](WriteOp op) { return store->Apply("acct", "T", {std::move(op)}, &res, &err); };
  auto get = [&](const std::string& pk, const std::string& rk) {
    auto e = store->GetEntity("acct", "t", pk, rk);
    REQUIRE_MESSAGE(e.ok(), e.status().ToString());
    return std::move(e).value();
  };

  SUBCASE("missing table") {
    Status s = store->Apply("acct", "nope", {Insert("p", "r")}, &res, &err);
    CHECK(s.code() == StatusCode::kTableNotFound);
    CHECK(err.status.code() == StatusCode::kTableNotFound);
    CHECK(err.index == 0);
  }

  SUBCASE("insert") {
    REQUIRE(apply(Insert("p", "r", {{"a", Value::Int32(1)}})).ok());
    REQUIRE(res.timestamps.size() == 1);
    Entity e = get("p", "r");
    CHECK(e.partition_key == "p");
    CHECK(e.row_key == "r");
    CHECK(e.timestamp == res.timestamps[0]);
    CHECK(e.properties == std::vector<Property>{{"a", Value::Int32(1)}});
    // A plausible server time: after 2020-01-01.
    CHECK(e.timestamp > 637134336000000000);
    CHECK(apply(Insert("p", "r")).code() == StatusCode::kAlreadyExists);
    CHECK(err.index == 0);
    // Empty keys are legal.
    REQUIRE(apply(Insert("", "")).ok());
    CHECK(get("", "").properties.empty());
  }

  SUBCASE("update") {
    CHECK(apply(Op(WriteKind::kUpdate, "p", "r", {})).code() == StatusCode::kNotFound);
    REQUIRE(apply(Insert("p", "r", {{"a", Value::Int32(1)}, {"b", Value::Boolean(true)}})).ok());
    int64_t t1 = res.timestamps[0];
    CHECK(apply(Op(WriteKind::kUpdate, "p", "r", {}, t1 - 1)).code() ==
          StatusCode::kConditionFailed);
    REQUIRE(apply(Op(WriteKind::kUpdate, "p", "r", {{"c", Value::String("x")}}, t1)).ok());
    int64_t t2 = res.timestamps[0];
    CHECK(t2 > t1);
    Entity e = get("p", "r");
    CHECK(e.timestamp == t2);
    CHECK(e.properties == std::vector<Property>{{"c", Value::String("x")}});
    // If-Match "*".
    REQUIRE(apply(Op(WriteKind::kUpdate, "p", "r", {}, std::nullopt)).ok());
    CHECK(get("p", "r").properties.empty());
    CHECK(res.timestamps[0] > t2);
    // The stale ETag no longer matches.
    CHECK(apply(Op(WriteKind::kUpdate, "p", "r", {}, t2)).code() == StatusCode::kConditionFailed);
  }

  SUBCASE("merge") {
    CHECK(apply(Op(WriteKind::kMerge, "p", "r", {})).code() == StatusCode::kNotFound);
    REQUIRE(apply(Insert("p", "r", {{"a", Value::Int32(1)}, {"b", Value::Boolean(true)}})).ok());
    int64_t t1 = res.timestamps[0];
    CHECK(apply(Op(WriteKind::kMerge, "p", "r", {}, t1 + 1)).code() ==
          StatusCode::kConditionFailed);
    REQUIRE(apply(Op(WriteKind::kMerge, "p", "r",
                     {{"c", Value::Double(2.5)}, {"a", Value::String("now a string")}}, t1))
                .ok());
    Entity e = get("p", "r");
    CHECK(e.timestamp > t1);
    CHECK(e.properties == std::vector<Property>{{"a", Value::String("now a string")},
                                                {"b", Value::Boolean(true)},
                                                {"c", Value::Double(2.5)}});
  }

  SUBCASE("merge over the property limit") {
    std::vector<Property> props;
    for (size_t i = 0; i < kMaxCustomProperties; ++i) {
      props.push_back({"p" + std::to_string(i), Value::Int32(static_cast<int32_t>(i))});
    }
    REQUIRE(apply(Insert("p", "r", props)).ok());
    // Overwriting existing names keeps the count.
    REQUIRE(apply(Op(WriteKind::kMerge, "p", "r", {{"p0", Value::Int64(5)}})).ok());
    Status s = apply(Op(WriteKind::kMerge, "p", "r", {{"extra", Value::Int32(1)}}));
    CHECK(s.code() == StatusCode::kTooManyProperties);
    s = apply(Op(WriteKind::kInsertOrMerge, "p", "r", {{"extra", Value::Int32(1)}}));
    CHECK(s.code() == StatusCode::kTooManyProperties);
    CHECK(get("p", "r").properties.size() == kMaxCustomProperties);
    CHECK(get("p", "r").properties[0].value == Value::Int64(5));
  }

  SUBCASE("delete") {
    CHECK(apply(Op(WriteKind::kDelete, "p", "r", {})).code() == StatusCode::kNotFound);
    REQUIRE(apply(Insert("p", "r")).ok());
    int64_t t1 = res.timestamps[0];
    CHECK(apply(Op(WriteKind::kDelete, "p", "r", {}, t1 + 7)).code() ==
          StatusCode::kConditionFailed);
    REQUIRE(apply(Op(WriteKind::kDelete, "p", "r", {}, t1)).ok());
    CHECK(res.timestamps == std::vector<int64_t>{0});
    CHECK(store->GetEntity("acct", "t", "p", "r").status().code() == StatusCode::kNotFound);
    REQUIRE(apply(Insert("p", "r")).ok());
    REQUIRE(apply(Op(WriteKind::kDelete, "p", "r", {}, std::nullopt)).ok());
    CHECK(store->GetEntity("acct", "t", "p", "r").status().code() == StatusCode::kNotFound);
  }

  SUBCASE("insert or replace") {
    REQUIRE(apply(Op(WriteKind::kInsertOrReplace, "p", "r", {{"a", Value::Int32(1)}})).ok());
    int64_t t1 = res.timestamps[0];
    // if_match is ignored for upserts.
    REQUIRE(
        apply(Op(WriteKind::kInsertOrReplace, "p", "r", {{"b", Value::Int32(2)}}, t1 - 100)).ok());
    Entity e = get("p", "r");
    CHECK(e.timestamp > t1);
    CHECK(e.properties == std::vector<Property>{{"b", Value::Int32(2)}});
  }

  SUBCASE("insert or merge") {
    REQUIRE(apply(Op(WriteKind::kInsertOrMerge, "p", "r", {{"a", Value::Int32(1)}})).ok());
    REQUIRE(apply(Op(WriteKind::kInsertOrMerge, "p", "r", {{"b", Value::Int32(2)}})).ok());
    CHECK(get("p", "r").properties ==
          std::vector<Property>{{"a", Value::Int32(1)}, {"b", Value::Int32(2)}});
  }

  SUBCASE("keys that are not UTF-8 are refused") {
    Status s = apply(Insert(std::string("\xFE", 1), "r"));
    CHECK(s.code() == StatusCode::kInvalidArgument);
    CHECK(store->GetEntity("acct", "t", std::string("\xFE", 1), "r").status().code() ==
          StatusCode::kNotFound);
  }

  SUBCASE("timestamps strictly increase per entity") {
    REQUIRE(apply(Insert("p", "r")).ok());
    int64_t prev = res.timestamps[0];
    for (int i = 0; i < 200; ++i) {
      REQUIRE(apply(Op(WriteKind::kMerge, "p", "r", {{"i", Value::Int32(i)}}, prev)).ok());
      CHECK(res.timestamps[0] > prev);
      prev = res.timestamps[0];
    }
  }
}

TEST_CASE_TEMPLATE("store: Apply is atomic", B, FileBackend, MemoryBackend, PostgresBackend) {
  TempDir dir;
  auto store = OpenStore<B>(dir);
  if (!store) return;  // no test database
  REQUIRE(store->CreateTable("acct", "t").ok());
  REQUIRE(store
              ->Apply("acct", "t", {Insert("p", "existing", {{"v", Value::Int32(1)}})}, nullptr,
                      nullptr)
              .ok());
  Entity before = *store->GetEntity("acct", "t", "p", "existing");

  ApplyResult res;
  ApplyError err;
  std::vector<WriteOp> batch = {
      Insert("p", "a"), Op(WriteKind::kMerge, "p", "existing", {{"v", Value::Int32(2)}}),
      Insert("p", "b"), Op(WriteKind::kUpdate, "p", "missing", {}),
      Insert("p", "c"),
  };
  Status s = store->Apply("acct", "t", batch, &res, &err);
  CHECK(s.code() == StatusCode::kNotFound);
  CHECK(err.status.code() == StatusCode::kNotFound);
  CHECK(err.index == 3);
  CHECK(ScanAll(*store, "t", {}).size() == 1);
  CHECK(*store->GetEntity("acct", "t", "p", "existing") == before);

  batch[3] = Op(WriteKind::kDelete, "p", "existing", {}, before.timestamp + 1);
  s = store->Apply("acct", "t", batch, &res, &err);
  CHECK(s.code() == StatusCode::kConditionFailed);
  CHECK(err.index == 3);
  CHECK(ScanAll(*store, "t", {}).size() == 1);

  // The same batch minus the failing op applies in full, one timestamp per op.
  batch.erase(batch.begin() + 3);
  REQUIRE(store->Apply("acct", "t", batch, &res, &err).ok());
  CHECK(res.timestamps.size() == 4);
  CHECK(ScanAll(*store, "t", {}).size() == 4);
  CHECK(store->GetEntity("acct", "t", "p", "existing")->properties ==
        std::vector<Property>{{"v", Value::Int32(2)}});
  // An empty Apply is fine.
  REQUIRE(store->Apply("acct", "t", {}, &res, &err).ok());
  CHECK(res.timestamps.empty());

  // Whatever fails last, after deletes, replaces and merges of existing rows
  // and inserts of new ones, leaves every row as it was.
  std::vector<Entity> snapshot = ScanAll(*store, "t", {});
  REQUIRE(snapshot.size() == 4);
  std::vector<Property> too_many;
  for (size_t i = 0; i <= kMaxCustomProperties; ++i) {
    too_many.push_back({"x" + std::to_string(i), Value::Int32(1)});
  }
  const std::vector<WriteOp> prefix = {
      Op(WriteKind::kDelete, "p", "a", {}),
      Op(WriteKind::kInsertOrReplace, "p", "b", {{"w", Value::Int32(9)}}),
      Op(WriteKind::kMerge, "p", "existing", {{"v", Value::Int32(3)}}),
      Insert("p", "new1"),
      Op(WriteKind::kInsertOrMerge, "q", "new2", {}),
  };
  const std::vector<std::pair<WriteOp, StatusCode>> last_ops = {
      {Insert("p", "c"), StatusCode::kAlreadyExists},
      {Op(WriteKind::kDelete, "p", "nope", {}), StatusCode::kNotFound},
      {Op(WriteKind::kUpdate, "p", "c", {}, 1), StatusCode::kConditionFailed},
      {Insert(std::string("\xFF", 1), "k"), StatusCode::kInvalidArgument},
      {Op(WriteKind::kMerge, "p", "c", too_many), StatusCode::kTooManyProperties},
  };
  for (const auto& [last, code] : last_ops) {
    std::vector<WriteOp> ops = prefix;
    ops.push_back(last);
    CAPTURE(static_cast<int>(code));
    CHECK(store->Apply("acct", "t", ops, &res, &err).code() == code);
    CHECK(err.index == prefix.size());
    CHECK(ScanAll(*store, "t", {}) == snapshot);
  }

  // Inserts find an existing row only as they write it; the refusal
  // reported is still the first in op order, and nothing stays written.
  const std::vector<std::tuple<std::vector<WriteOp>, StatusCode, size_t>> orders = {
      {{Insert("p", "n1"), Insert("p", "c"), Insert("p", "n2")}, StatusCode::kAlreadyExists, 1},
      {{Insert("p", "c"), Op(WriteKind::kUpdate, "p", "nope", {})}, StatusCode::kAlreadyExists, 0},
      {{Insert("p", "n1"), Insert("p", "c"), Op(WriteKind::kDelete, "p", "nope", {})},
       StatusCode::kAlreadyExists,
       1},
      {{Insert("p", "n1"), Op(WriteKind::kUpdate, "p", "nope", {})}, StatusCode::kNotFound, 1},
      {{Insert("p", "c")}, StatusCode::kAlreadyExists, 0},
  };
  for (const auto& [ops, code, index] : orders) {
    CAPTURE(static_cast<int>(code));
    CAPTURE(index);
    CHECK(store->Apply("acct", "t", ops, &res, &err).code() == code);
    CHECK(err.index == index);
    CHECK(ScanAll(*store, "t", {}) == snapshot);
  }
}

TEST_CASE_TEMPLATE("store: Scan", B, FileBackend, MemoryBackend, PostgresBackend) {
  TempDir dir;
  auto store = OpenStore<B>(dir);
  if (!store) return;  // no test database
  REQUIRE(store->CreateTable("acct", "t").ok());
  std::vector<WriteOp> ops;
  for (int p = 0; p < 5; ++p) {
    for (int r = 0; r < 10; ++r) {
      ops.push_back(Insert("p" + std::to_string(p), "r" + std::to_string(r),
                           {{"n", Value::Int32(p * 10 + r)}}));
    }
  }
  REQUIRE(store->Apply("acct", "t", ops, nullptr, nullptr).ok());

  ScanRequest all;
  ScanResult res;
  REQUIRE(store->Scan("acct", "t", all, &res).ok());
  REQUIRE(res.entities.size() == 50);
  CHECK_FALSE(res.next);
  for (int i = 0; i < 50; ++i) CHECK(*res.entities[i].Find("n") == Value::Int32(i));

  CHECK(store->Scan("acct", "nope", all, &res).code() == StatusCode::kTableNotFound);

  auto keys = [&](ScanRequest req) {
    ScanResult r;
    Status s = store->Scan("acct", "t", req, &r);
    REQUIRE_MESSAGE(s.ok(), s.ToString());
    return Keys(r.entities);
  };
  auto range = [](std::optional<KeyBound> lo, std::optional<KeyBound> hi) {
    return KeyRange{std::move(lo), std::move(hi)};
  };

  SUBCASE("partition-only bounds") {
    ScanRequest req;
    req.ranges = {range(KeyBound{"p1", std::nullopt, true}, KeyBound{"p1", std::nullopt, true})};
    CHECK(keys(req).size() == 10);
    req.ranges = {range(KeyBound{"p1", std::nullopt, false}, KeyBound{"p3", std::nullopt, false})};
    auto k = keys(req);
    REQUIRE(k.size() == 10);
    CHECK(k.front() == "p2/r0");
    CHECK(k.back() == "p2/r9");
  }

  SUBCASE("composite bounds and several ranges") {
    ScanRequest req;
    req.ranges = {
        range(KeyBound{"p0", "r8", false}, KeyBound{"p1", "r1", true}),
        range(KeyBound{"p3", "r5", true}, KeyBound{"p3", "r7", false}),
        range(KeyBound{"p4", "r9", true}, std::nullopt),
    };
    CHECK(keys(req) ==
          std::vector<std::string>{"p0/r9", "p1/r0", "p1/r1", "p3/r5", "p3/r6", "p4/r9"});
  }

  SUBCASE("empty range list and empty ranges") {
    ScanRequest req;
    req.ranges = {};
    CHECK(keys(req).empty());
    req.ranges = {range(KeyBound{"p2", "r5", true}, KeyBound{"p2", "r5", false})};
    CHECK(keys(req).empty());
    req.ranges = {range(KeyBound{"q", std::nullopt, true}, std::nullopt)};
    CHECK(keys(req).empty());
  }

  SUBCASE("start") {
    ScanRequest req;
    req.start = EntityKey{"p3", "r7"};
    auto k = keys(req);
    REQUIRE(k.size() == 13);
    CHECK(k.front() == "p3/r7");
    // Start before a range's lower bound: the bound wins.
    req.ranges = {range(KeyBound{"p4", "r5", false}, std::nullopt)};
    CHECK(keys(req).front() == "p4/r6");
    // Start inside an exclusive partition bound: the partition is skipped.
    req.ranges = {range(KeyBound{"p3", std::nullopt, false}, std::nullopt)};
    CHECK(keys(req).front() == "p4/r0");
    // Start past a range: that range contributes nothing.
    req.ranges = {range(std::nullopt, KeyBound{"p1", std::nullopt, true}),
                  range(KeyBound{"p3", std::nullopt, true}, std::nullopt)};
    CHECK(keys(req).front() == "p3/r7");
    // Start on a key that does not exist.
    req.ranges = {KeyRange::All()};
    req.start = EntityKey{"p2", "r55"};
    CHECK(keys(req).front() == "p2/r6");
  }

  SUBCASE("limit and next") {
    ScanRequest req;
    req.limit = 7;
    REQUIRE(store->Scan("acct", "t", req, &res).ok());
    CHECK(res.entities.size() == 7);
    REQUIRE(res.next);
    CHECK(*res.next == EntityKey{"p0", "r7"});
    // Limit reached exactly at the end of a range: next is the first row of
    // a later range.
    req.ranges = {range(KeyBound{"p0", std::nullopt, true}, KeyBound{"p0", "r1", true}),
                  range(KeyBound{"p2", "r4", true}, std::nullopt)};
    req.limit = 2;
    REQUIRE(store->Scan("acct", "t", req, &res).ok());
    CHECK(Keys(res.entities) == std::vector<std::string>{"p0/r0", "p0/r1"});
    REQUIRE(res.next);
    CHECK(*res.next == EntityKey{"p2", "r4"});
    // Limit reached at the very end: nothing remains.
    req.ranges = {range(KeyBound{"p4", "r8", true}, std::nullopt)};
    REQUIRE(store->Scan("acct", "t", req, &res).ok());
    CHECK(res.entities.size() == 2);
    CHECK_FALSE(res.next);
    req.limit = 0;
    REQUIRE(store->Scan("acct", "t", req, &res).ok());
    CHECK(res.entities.empty());
    REQUIRE(res.next);
    CHECK(*res.next == EntityKey{"p4", "r8"});
  }

  SUBCASE("predicate and max_examined") {
    ScanRequest req;
    req.predicate = [](const Entity& e) { return e.Find("n")->int32() % 10 == 9; };
    req.max_examined = 15;
    REQUIRE(store->Scan("acct", "t", req, &res).ok());
    CHECK(Keys(res.entities) == std::vector<std::string>{"p0/r9"});
    REQUIRE(res.next);
    CHECK(*res.next == EntityKey{"p1", "r5"});
    req.max_examined = SIZE_MAX;
    CHECK(ScanAll(*store, "t", req).size() == 5);
    req.limit = 2;
    req.max_examined = 3;
    CHECK(ScanAll(*store, "t", req).size() == 5);
  }

  SUBCASE("random bounds and starts agree with KeyRange::Contains (differential)") {
    // Bounds within one partition take another SQL form than the others;
    // equal partitions are drawn often so that both forms are exercised.
    std::mt19937 rng(42);
    auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
    auto bound = [&]() -> std::optional<KeyBound> {
      if (pick(5) == 0) return std::nullopt;
      KeyBound b{"p" + std::to_string(pick(6)), std::nullopt, pick(2) == 0};
      if (pick(3) != 0) b.row_key = "r" + std::to_string(pick(11)) + (pick(4) == 0 ? "5" : "");
      return b;
    };
    ScanRequest whole;
    std::vector<std::string> all_keys = keys(whole);
    for (int i = 0; i < 400; ++i) {
      ScanRequest req;
      KeyRange r{bound(), bound()};
      if (pick(2) == 0 && r.lower && r.upper) r.upper->partition_key = r.lower->partition_key;
      req.ranges = {r};
      std::optional<EntityKey> start;
      if (pick(3) == 0) {
        start = EntityKey{"p" + std::to_string(pick(6)), "r" + std::to_string(pick(11))};
        req.start = start;
      }
      std::vector<std::string> expected;
      for (int p = 0; p < 5; ++p) {
        for (int row = 0; row < 10; ++row) {
          std::string pk = "p" + std::to_string(p), rk = "r" + std::to_string(row);
          if (!r.Contains(pk, rk)) continue;
          if (start &&
              (pk < start->partition_key || (pk == start->partition_key && rk < start->row_key)))
            continue;
          expected.push_back(pk + "/" + rk);
        }
      }
      std::sort(expected.begin(), expected.end());
      CHECK_MESSAGE(keys(req) == expected, r.ToString());
    }
    CHECK(all_keys.size() == 50);
  }

  SUBCASE("paging visits every row once") {
    ScanRequest req;
    req.limit = 3;
    auto rows = ScanAll(*store, "t", req);
    CHECK(rows.size() == 50);
    req.limit = 50;
    CHECK(ScanAll(*store, "t", req).size() == 50);
  }
}

TEST_CASE_TEMPLATE("store: ScanRows visits rows undecoded, as Scan returns them", B, FileBackend,
                   MemoryBackend, PostgresBackend) {
  TempDir dir;
  auto store = OpenStore<B>(dir);
  if (!store) return;  // no test database
  REQUIRE(store->CreateTable("acct", "t").ok());
  std::vector<WriteOp> ops;
  for (int r = 0; r < 30; ++r) {
    ops.push_back(Insert("p", "r" + std::to_string(100 + r),
                         {{"n", Value::Int32(r)}, {"s", Value::String(std::string(r, 'x'))}}));
  }
  REQUIRE(store->Apply("acct", "t", ops, nullptr, nullptr).ok());

  ScanRequest req;
  req.limit = 20;
  ScanResult scanned;
  REQUIRE(store->Scan("acct", "t", req, &scanned).ok());
  REQUIRE(scanned.entities.size() == 20);
  std::vector<Entity> visited;
  std::optional<EntityKey> next;
  Status s = store->ScanRows(
      "acct", "t", req,
      [&](EntityRow& row) {
        CHECK(row.decoded == nullptr);
        Entity& e = visited.emplace_back();
        e.partition_key = std::string(row.partition_key);
        e.row_key = std::string(row.row_key);
        e.timestamp = row.timestamp;
        return DecodeProperties(row.properties, &e.properties);
      },
      &next);
  REQUIRE(s.ok());
  CHECK(visited == scanned.entities);
  REQUIRE(next);
  CHECK(next == scanned.next);
  CHECK(next->row_key == "r120");

  // With a predicate the row comes decoded (and only matching rows come).
  req.predicate = [](const Entity& e) { return e.Find("n")->int32() % 2 == 1; };
  int seen = 0;
  s = store->ScanRows(
      "acct", "t", req,
      [&](EntityRow& row) {
        REQUIRE(row.decoded != nullptr);
        CHECK(row.decoded->Find("n")->int32() % 2 == 1);
        CHECK(row.row_key == row.decoded->row_key);
        ++seen;
        return Status::Ok();
      },
      &next);
  REQUIRE(s.ok());
  CHECK(seen == 15);
  CHECK_FALSE(next);

  // A visitor's error ends the scan with that error.
  req.predicate = nullptr;
  seen = 0;
  s = store->ScanRows(
      "acct", "t", req,
      [&](EntityRow&) { return ++seen == 3 ? Status::IOError("stop") : Status::Ok(); }, &next);
  CHECK(s.code() == StatusCode::kIOError);
  CHECK(seen == 3);
}

TEST_CASE_TEMPLATE("store: Scan follows UTF-16 order (differential)", B, FileBackend, MemoryBackend,
                   PostgresBackend) {
  TempDir dir;
  auto store = OpenStore<B>(dir);
  if (!store) return;  // no test database
  REQUIRE(store->CreateTable("acct", "t").ok());
  const std::vector<std::string> pieces = {"",
                                           "a",
                                           "b",
                                           "'",
                                           "_",
                                           "\xC3\xA9" /* U+00E9 */,
                                           "\xEE\x80\x80" /* U+E000 */,
                                           "\xEF\xBF\xBD" /* U+FFFD */,
                                           "\xF0\x9F\x98\x80" /* U+1F600 */,
                                           "A"};
  unsigned seed = static_cast<unsigned>(std::random_device{}());
  MESSAGE("seed " << seed);
  std::mt19937 rng(seed);
  auto random_key = [&] {
    std::string s;
    for (int n = static_cast<int>(rng() % 4); n > 0; --n) s += pieces[rng() % pieces.size()];
    return s;
  };
  std::map<std::pair<std::string, std::string>, int> model;
  std::vector<WriteOp> ops;
  for (int i = 0; i < 400; ++i) {
    std::string pk = random_key(), rk = random_key();
    if (model.count({pk, rk})) continue;
    model[{pk, rk}] = i;
    ops.push_back(Insert(pk, rk, {{"i", Value::Int32(i)}}));
  }
  REQUIRE(store->Apply("acct", "t", ops, nullptr, nullptr).ok());
  std::vector<EntityKey> sorted;
  for (const auto& [k, v] : model) sorted.push_back({k.first, k.second});
  std::sort(sorted.begin(), sorted.end(), [](const EntityKey& a, const EntityKey& b) {
    int c = CompareOrdinal(a.partition_key, b.partition_key);
    return c != 0 ? c < 0 : CompareOrdinal(a.row_key, b.row_key) < 0;
  });

  auto random_bound = [&]() -> std::optional<KeyBound> {
    if (rng() % 4 == 0) return std::nullopt;
    KeyBound b{random_key(), std::nullopt, rng() % 2 == 0};
    if (rng() % 2 == 0) b.row_key = random_key();
    return b;
  };
  for (int iter = 0; iter < 300; ++iter) {
    KeyRange r{random_bound(), random_bound()};
    ScanRequest req;
    req.ranges = {r};
    req.limit = 1 + rng() % 20;
    req.predicate = [](const Entity& e) { return e.Find("i")->int32() % 3 != 0; };
    std::vector<std::string> expected;
    for (const auto& k : sorted) {
      if (!r.Contains(k.partition_key, k.row_key)) continue;
      if (model[{k.partition_key, k.row_key}] % 3 == 0) continue;
      expected.push_back(k.partition_key + "/" + k.row_key);
    }
    CAPTURE(r.ToString());
    CHECK(Keys(ScanAll(*store, "t", req)) == expected);
  }
}

TEST_CASE_TEMPLATE("store: concurrent writers and readers", B, FileBackend, MemoryBackend,
                   PostgresBackend) {
  TempDir dir;
  auto store = OpenStore<B>(dir);
  if (!store) return;  // no test database
  REQUIRE(store->CreateTable("acct", "t").ok());
  REQUIRE(store
              ->Apply("acct", "t", {Insert("shared", "counter", {{"n", Value::Int64(0)}})}, nullptr,
                      nullptr)
              .ok());
  constexpr int kThreads = 6;
  constexpr int kPerThread = 150;
  std::atomic<int> failures{0};
  std::atomic<int> increments{0};
  std::atomic<bool> done{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        std::string pk = "w" + std::to_string(t);
        std::vector<WriteOp> ops = {Insert(pk, std::to_string(i) + "a"),
                                    Insert(pk, std::to_string(i) + "b")};
        if (!store->Apply("acct", "t", ops, nullptr, nullptr).ok()) ++failures;
        // Optimistic read-modify-write of a shared counter.
        auto e = store->GetEntity("acct", "t", "shared", "counter");
        if (!e.ok()) {
          ++failures;
          continue;
        }
        int64_t n = e->Find("n")->int64();
        Status s = store->Apply("acct", "t",
                                {Op(WriteKind::kUpdate, "shared", "counter",
                                    {{"n", Value::Int64(n + 1)}}, e->timestamp)},
                                nullptr, nullptr);
        if (s.ok()) {
          ++increments;
        } else if (s.code() != StatusCode::kConditionFailed) {
          ++failures;
        }
      }
    });
  }
  std::thread reader([&] {
    while (!done) {
      ScanResult res;
      ScanRequest req;
      req.limit = 100;
      if (!store->Scan("acct", "t", req, &res).ok()) ++failures;
      if (!store->Healthy()) ++failures;
    }
  });
  for (auto& th : threads) th.join();
  done = true;
  reader.join();
  CHECK(failures == 0);
  CHECK(ScanAll(*store, "t", {}).size() == 1 + kThreads * kPerThread * 2);
  CHECK(store->GetEntity("acct", "t", "shared", "counter")->Find("n")->int64() == increments);
}

TEST_CASE_TEMPLATE("store: writes queued together for several tables each land in their own", B,
                   FileBackend, MemoryBackend, PostgresBackend) {
  TempDir dir;
  auto store = OpenStore<B>(dir);
  if (!store) return;  // no test database
  REQUIRE(store->CreateTable("acct", "a").ok());
  REQUIRE(store->CreateTable("acct", "b").ok());
  REQUIRE(store->CreateTable("other", "a").ok());
  // Queued from several threads so that groups mix tables, accounts, a
  // table named in another case and a missing table.
  const std::vector<std::pair<std::string, std::string>> targets = {
      {"acct", "a"}, {"acct", "b"}, {"other", "a"}, {"acct", "A"}, {"acct", "missing"}};
  constexpr int kThreads = 4;
  constexpr int kPerThread = 50;
  std::mutex mu;
  std::map<std::string, Status> outcomes;  // row key -> status
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        const auto& [account, table] = targets[static_cast<size_t>(i + t) % targets.size()];
        std::string rk = account + "/" + table + "/" + std::to_string(t * 1000 + i);
        store->ApplyAsync(account, table, {Insert("p", rk)}, [&, rk](ApplyOutcome out) {
          std::lock_guard<std::mutex> lock(mu);
          outcomes[rk] = out.status;
        });
      }
    });
  }
  for (auto& th : threads) th.join();
  store->Flush();
  REQUIRE(outcomes.size() == kThreads * kPerThread);
  std::map<std::string, size_t> expected;  // "account/lower table" -> rows
  for (const auto& [rk, status] : outcomes) {
    CAPTURE(rk);
    std::string account = rk.substr(0, rk.find('/'));
    std::string table = rk.substr(account.size() + 1, rk.rfind('/') - account.size() - 1);
    if (table == "missing") {
      CHECK(status.code() == StatusCode::kTableNotFound);
      continue;
    }
    REQUIRE(status.ok());
    CHECK(store->GetEntity(account, table, "p", rk).ok());
    ++expected[account + "/" + (table == "A" ? std::string("a") : table)];
  }
  const std::vector<std::pair<std::string, std::string>> tables = {
      {"acct", "a"}, {"acct", "b"}, {"other", "a"}};
  for (const auto& t : tables) {
    CAPTURE(t.first);
    CAPTURE(t.second);
    ScanRequest req;
    ScanResult res;
    Status s = store->Scan(t.first, t.second, req, &res);
    REQUIRE(s.ok());
    CHECK_FALSE(res.next.has_value());
    CHECK(res.entities.size() == expected[t.first + "/" + t.second]);
  }

  SUBCASE("a table dropped and created again between writes gets the later ones") {
    REQUIRE(store->Apply("acct", "b", {Insert("q", "before")}, nullptr, nullptr).ok());
    REQUIRE(store->DeleteTable("acct", "b").ok());
    REQUIRE(store->CreateTable("acct", "b").ok());
    REQUIRE(store->Apply("acct", "b", {Insert("q", "after")}, nullptr, nullptr).ok());
    auto rows = ScanAll(*store, "b", {});
    REQUIRE(rows.size() == 1);
    CHECK(rows[0].row_key == "after");
  }
}

TEST_CASE_TEMPLATE("store: ApplyAsync commits queued writes, each atomically, callbacks in order",
                   B, FileBackend, MemoryBackend, PostgresBackend) {
  TempDir dir;
  auto store = OpenStore<B>(dir);
  if (!store) return;  // no test database
  REQUIRE(store->CreateTable("acct", "t").ok());
  REQUIRE(store->Apply("acct", "t", {Insert("p", "taken")}, nullptr, nullptr).ok());

  // From several threads at once, so that groups form: every third write
  // is a two-op change set whose second op collides and must leave nothing.
  constexpr int kThreads = 4;
  constexpr int kPerThread = 60;
  std::mutex mu;
  std::vector<std::pair<int, ApplyOutcome>> outcomes;  // (tag, outcome) in callback order
  std::atomic<int> callbacks{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        int tag = t * 1000 + i;
        std::string rk = std::to_string(tag);
        std::vector<WriteOp> ops = {Insert("p", rk, {{"v", Value::Int32(tag)}})};
        if (i % 3 == 0) ops.push_back(Insert("p", "taken"));
        store->ApplyAsync("acct", "t", std::move(ops), [&, tag](ApplyOutcome out) {
          std::lock_guard<std::mutex> lock(mu);
          outcomes.emplace_back(tag, std::move(out));
          ++callbacks;
        });
      }
    });
  }
  for (auto& th : threads) th.join();
  // Flush returns only after every callback queued before it ran.
  store->Flush();
  CHECK(callbacks == kThreads * kPerThread);

  std::map<int, int> last_seen;  // thread -> last i, to check per-thread order
  std::lock_guard<std::mutex> lock(mu);
  for (const auto& [tag, out] : outcomes) {
    int t = tag / 1000, i = tag % 1000;
    CAPTURE(tag);
    if (last_seen.count(t)) CHECK(last_seen[t] < i);
    last_seen[t] = i;
    // The ops come back with the outcome.
    REQUIRE(!out.ops.empty());
    CHECK(out.ops[0].entity.row_key == std::to_string(tag));
    auto stored = store->GetEntity("acct", "t", "p", std::to_string(tag));
    if (i % 3 == 0) {
      CHECK(out.status.code() == StatusCode::kAlreadyExists);
      CHECK(out.error.index == 1);
      CHECK(stored.status().code() == StatusCode::kNotFound);
    } else {
      REQUIRE(out.status.ok());
      REQUIRE(out.result.timestamps.size() == 1);
      REQUIRE(stored.ok());
      CHECK(stored->timestamp == out.result.timestamps[0]);
      CHECK(stored->Find("v")->int32() == tag);
    }
  }
  CHECK(ScanAll(*store, "t", {}).size() == 1 + kThreads * (kPerThread - kPerThread / 3));

  SUBCASE("a missing table fails every write queued for it, and only those") {
    std::atomic<int> pending{2};
    Status missing, present;
    store->ApplyAsync("acct", "nope", {Insert("p", "x")}, [&](ApplyOutcome out) {
      missing = out.status;
      --pending;
    });
    store->ApplyAsync("acct", "t", {Insert("p", "y")}, [&](ApplyOutcome out) {
      present = out.status;
      --pending;
    });
    store->Flush();
    CHECK(pending == 0);
    CHECK(missing.code() == StatusCode::kTableNotFound);
    CHECK(present.ok());
  }
}

namespace {

// Queues a write whose callback holds the store's callback thread until
// released, then, once it holds it, `count` more writes, each recording its outcome's
// more_in_batch and its thread; then waits until `committed` says the last
// one is in, releases the first callback and flushes.
struct BatchRun {
  std::vector<bool> more;
  std::vector<std::thread::id> threads;
};
BatchRun RunHeldWrites(SqliteStore& store, int count, const std::function<bool()>& committed) {
  std::mutex mu;
  std::condition_variable cv;
  bool held = false, release = false;
  BatchRun run;
  store.ApplyAsync("acct", "t", {Insert("held", "0")}, [&](ApplyOutcome out) {
    CHECK(out.status.ok());
    std::unique_lock<std::mutex> lock(mu);
    held = true;
    cv.notify_all();
    cv.wait(lock, [&] { return release; });
  });
  {
    // The others are queued only once it holds the thread, so none of them
    // is in its run.
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return held; });
  }
  for (int i = 0; i < count; ++i) {
    store.ApplyAsync("acct", "t", {Insert("p", std::to_string(1000 + i))}, [&](ApplyOutcome out) {
      CHECK(out.status.ok());
      std::lock_guard<std::mutex> lock(mu);
      run.more.push_back(out.more_in_batch);
      run.threads.push_back(std::this_thread::get_id());
    });
  }
  while (!committed()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  {
    std::lock_guard<std::mutex> lock(mu);
    release = true;
  }
  cv.notify_all();
  store.Flush();
  std::lock_guard<std::mutex> lock(mu);
  return run;
}

}  // namespace

// The server holds the answers of a run of callbacks back until the one
// marked last, and wakes each I/O thread once for them: a run must end
// with a callback marked last, or its answers would wait for the next run.
TEST_CASE_TEMPLATE("store: ApplyAsync callbacks of one commit come as a run whose last is marked",
                   B, FileBackend, MemoryBackend) {
  TempDir dir;
  auto store = OpenStore<B>(dir);  // no WAL sync: callbacks run on the committer
  REQUIRE(store->CreateTable("acct", "t").ok());
  // While the first write's callback holds the committer, the others queue
  // and are committed as one group.
  BatchRun run = RunHeldWrites(*store, 20, [] { return true; });
  REQUIRE(run.more.size() == 20);
  for (size_t i = 0; i + 1 < run.more.size(); ++i) CHECK(run.more[i]);
  CHECK_FALSE(run.more.back());
  CHECK(std::count(run.threads.begin(), run.threads.end(), run.threads[0]) == 20);
}

TEST_CASE(
    "store(file): with WAL syncs, the callbacks of one sync come as a run whose last is marked") {
  TempDir dir;
  SqliteStoreOptions options = TestOptions();
  options.fsync_commits = true;
  auto store = OpenStore<FileBackend>(dir, options);
  REQUIRE(store->CreateTable("acct", "t").ok());
  // The first write's callback holds the syncer; the others are committed
  // meanwhile (visible to readers before their sync) and wait for one sync.
  BatchRun run =
      RunHeldWrites(*store, 20, [&] { return store->GetEntity("acct", "t", "p", "1019").ok(); });
  REQUIRE(run.more.size() == 20);
  for (size_t i = 0; i + 1 < run.more.size(); ++i) CHECK(run.more[i]);
  CHECK_FALSE(run.more.back());
  CHECK(std::count(run.threads.begin(), run.threads.end(), run.threads[0]) == 20);
}

TEST_CASE_TEMPLATE("store: WriteEpoch grows with every write, by the time it is answered", B,
                   FileBackend, MemoryBackend) {
  TempDir dir;
  auto store = OpenStore<B>(dir);
  auto epoch = [&] {
    std::optional<uint64_t> e = store->WriteEpoch();
    REQUIRE(e.has_value());
    return *e;
  };
  uint64_t e = epoch();
  // Each kind of write, checked once it has returned (or called back).
  auto wrote = [&](const char* what) {
    INFO(what);
    uint64_t now = epoch();
    CHECK(now > e);
    e = now;
  };
  REQUIRE(store->CreateTable("acct", "t").ok());
  wrote("CreateTable");
  REQUIRE(store->Apply("acct", "t", {Insert("p", "1"), Insert("p", "2")}, nullptr, nullptr).ok());
  wrote("Apply");
  std::promise<uint64_t> seen;
  store->ApplyAsync("acct", "t", {Insert("p", "3")}, [&](ApplyOutcome outcome) {
    CHECK(outcome.status.ok());
    seen.set_value(*store->WriteEpoch());  // as the write is answered
  });
  CHECK(seen.get_future().get() > e);
  wrote("ApplyAsync");
  REQUIRE(store->SetTableAcl("acct", "t", "<acl/>").ok());
  wrote("SetTableAcl");
  // Reads leave it alone.
  ScanResult all;
  REQUIRE(store->Scan("acct", "t", {}, &all).ok());
  REQUIRE(all.entities.size() == 3);
  REQUIRE(store->GetEntity("acct", "t", "p", "1").ok());
  CHECK(epoch() == e);
  REQUIRE(store->DeleteTable("acct", "t").ok());
  wrote("DeleteTable");
  REQUIRE(store->ResetAccount("acct").ok());
  wrote("ResetAccount");
}

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

TEST_CASE("store(file): the checkpointer copies the WAL into the database in the background") {
  // About 5,000 WAL pages: past the checkpointer's trigger (4,000), short of
  // the size at which the writer copies the WAL itself (8,000). The
  // database file grows only when pages are copied into it.
  TempDir dir;
  auto store = OpenStore<FileBackend>(dir);
  REQUIRE(store->CreateTable("acct", "wal").ok());
  const std::string db = dir.path() + "/sub/dir/store.db";
  const auto initial = std::filesystem::file_size(db);
  const std::string filler(3000, 'x');  // about one page per entity
  for (int b = 0; b < 50; ++b) {
    std::vector<WriteOp> ops;
    for (int i = 0; i < 100; ++i) {
      ops.push_back(Insert("p", std::to_string(b * 100 + i), {{"v", Value::String(filler)}}));
    }
    REQUIRE(store->Apply("acct", "wal", ops, nullptr, nullptr).ok());
  }
  std::uintmax_t size = initial;
  for (int i = 0; i < 500 && size < 8 * 1024 * 1024; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    size = std::filesystem::file_size(db);
  }
  CHECK(size >= 8 * 1024 * 1024);
}

TEST_CASE("store(file): under steady small writes the WAL rewinds after a pass or two") {
  // Single commits of about one page each, one after another as a busy
  // server's are: each checkpointer pass finds the writer a few commits
  // further on. The writer copies those itself (wal_checkpoint.h), so the
  // WAL rewinds soon after each pass instead of after the checkpointer has
  // chased it for ~15 more (or, with its reads blocked, at the hard limit).
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
  CHECK(stats.checkpoints_writer >= 1);
  // Without the writer's copy: tens of passes a rewind. With it, 1-2 on a
  // fast disk, up to ~6 where the device writes back slowly (a pass's paced
  // writes then take long enough for the writer to move more than
  // catch_up_pages ahead, and the next pass chases it), hence the bound of
  // 10.
  CHECK(stats.checkpoints_background <= 10 * stats.wal_rewinds);
  MESSAGE("rewinds " << stats.wal_rewinds << ", passes " << stats.checkpoints_background
                     << ", writer copies " << stats.checkpoints_writer);
}

TEST_CASE("store(file): once writes stop, the WAL is copied for the next write to rewind it") {
  // A load's last commits land while the checkpointer's pass runs, past the
  // frames that pass copies. Were they left for the next write, that write
  // (a Delete Table after a bulk load, say) would copy them itself: 40-70 ms
  // for a load of ~500-byte entities. The checkpointer copies them once no
  // commit has come for a moment, so the next write only rewinds the WAL.
  TempDir dir;
  auto store = OpenStore<FileBackend>(dir);
  REQUIRE(store->CreateTable("acct", "wal").ok());
  const std::string filler(3000, 'x');  // about one page per entity
  int key = 0;
  for (int round = 0; round < 3; ++round) {
    CAPTURE(round);
    // ~6,000 frames: past the 4,000 that start a pass, and more meanwhile.
    for (int b = 0; b < 60; ++b) {
      std::vector<WriteOp> ops;
      for (int i = 0; i < 100; ++i) {
        ops.push_back(Insert("p", std::to_string(key++), {{"v", Value::String(filler)}}));
      }
      REQUIRE(store->Apply("acct", "wal", ops, nullptr, nullptr).ok());
    }
    // Until the checkpointer has been idle for a while (a slow machine's
    // passes take longer).
    SqliteStoreStats before = store->GetStats();
    for (int i = 0; i < 100; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(150));
      const SqliteStoreStats now = store->GetStats();
      if (now.checkpoints_background == before.checkpoints_background) break;
      before = now;
    }
    REQUIRE(store->Apply("acct", "wal", {Insert("q", std::to_string(round), {})}, nullptr, nullptr)
                .ok());
    const SqliteStoreStats after = store->GetStats();
    CHECK(after.checkpoints_writer == before.checkpoints_writer);
    CHECK(after.wal_rewinds == before.wal_rewinds + 1);
    MESSAGE("passes " << after.checkpoints_background << " (once idle " << after.checkpoints_idle
                      << "), writer copies " << after.checkpoints_writer);
  }
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
  TempDir dir;
  SqliteStoreOptions tiny_chunks = TestOptions();
  tiny_chunks.reap_chunk_rows = 10;
  auto store = OpenStore<FileBackend>(dir, tiny_chunks);
  REQUIRE(store->CreateTable("acct", "t").ok());
  std::vector<WriteOp> ops;
  for (int i = 0; i < 8000; ++i) ops.push_back(Insert("p", std::to_string(i)));
  REQUIRE(store->Apply("acct", "t", ops, nullptr, nullptr).ok());
  REQUIRE(store->DeleteTable("acct", "t").ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  auto t0 = std::chrono::steady_clock::now();
  store.reset();
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(2));
  // What was left is still pending and is finished by the next open.
  store = OpenStore<FileBackend>(dir);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (*store->CountEntityRowsForTesting() != 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK(*store->CountEntityRowsForTesting() == 0);
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

// Work done by `fn`, as counted by the store. REQUIRES: no reaper thread and
// no other thread using the store, so the difference is fn's alone.
template <typename Fn>
SqliteStoreStats WorkOf(SqliteStore& store, Fn&& fn) {
  SqliteStoreStats before = store.GetStats();
  fn();
  SqliteStoreStats after = store.GetStats();
  return SqliteStoreStats{after.statements_prepared - before.statements_prepared,
                          after.statements_run - before.statements_run,
                          after.vm_steps - before.vm_steps};
}

void InsertRows(Store& store, const std::string& table, const std::string& pk, int from, int to) {
  std::vector<WriteOp> ops;
  auto flush = [&] {
    REQUIRE(store.Apply("acct", table, ops, nullptr, nullptr).ok());
    ops.clear();
  };
  for (int i = from; i < to; ++i) {
    char rk[16];
    std::snprintf(rk, sizeof rk, "r%05d", i);
    ops.push_back(Insert(pk, rk, {{"n", Value::Int32(i)}}));
    if (ops.size() == 2000) flush();
  }
  if (!ops.empty()) flush();
}

SqliteStoreOptions NoReaper() {
  SqliteStoreOptions options = TestOptions();
  options.background_reaping = false;
  return options;
}

TEST_CASE_TEMPLATE("store: keys sort in UTF-16 code unit order, not UTF-8 byte order", B,
                   FileBackend, MemoryBackend, PostgresBackend) {
  TempDir dir;
  auto store = OpenStore<B>(dir);
  if (!store) return;  // no test database
  REQUIRE(store->CreateTable("acct", "t").ok());
  // Ordinal (UTF-16) order. UTF-8 byte order would put U+E000 and U+FFFD
  // before U+10000 and U+1F600 (lead bytes EE/EF < F0).
  const std::vector<std::string> ordered = {
      "",
      "z",
      "\xED\x9F\xBF" /* U+D7FF */,
      "\xF0\x90\x80\x80" /* U+10000, D800 DC00 */,
      "\xF0\x90\x80\x80"
      "a",
      "\xF0\x9F\x98\x80" /* U+1F600, D83D DE00 */,
      "\xEE\x80\x80" /* U+E000 */,
      "\xEF\xBF\xBD" /* U+FFFD */,
      "\xEF\xBF\xBF" /* U+FFFF */,
  };
  std::vector<WriteOp> ops;
  std::vector<std::string> expected;
  // Written in reverse so insertion order cannot pass for key order.
  for (auto pk = ordered.rbegin(); pk != ordered.rend(); ++pk) {
    for (auto rk = ordered.rbegin(); rk != ordered.rend(); ++rk) ops.push_back(Insert(*pk, *rk));
  }
  for (const auto& pk : ordered) {
    for (const auto& rk : ordered) expected.push_back(pk + "/" + rk);
  }
  REQUIRE(store->Apply("acct", "t", ops, nullptr, nullptr).ok());

  CHECK(Keys(ScanAll(*store, "t", {})) == expected);
  // One row per page: every continuation resumes in the same order.
  ScanRequest one;
  one.limit = 1;
  CHECK(Keys(ScanAll(*store, "t", one)) == expected);

  // Bounds compare the same way: [U+10000, U+E000) holds the two
  // supplementary partitions only, in both key positions.
  const std::string& sup = ordered[3];
  const std::string& bmp_high = ordered[6];
  ScanRequest req;
  req.ranges = {
      KeyRange{KeyBound{sup, std::nullopt, true}, KeyBound{bmp_high, std::nullopt, false}}};
  std::vector<Entity> rows = ScanAll(*store, "t", req);
  REQUIRE(rows.size() == 3 * ordered.size());
  CHECK(rows.front().partition_key == sup);
  CHECK(rows.back().partition_key == ordered[5]);
  req.ranges = {KeyRange{KeyBound{"z", sup, false}, KeyBound{"z", bmp_high, true}}};
  CHECK(Keys(ScanAll(*store, "t", req)) ==
        std::vector<std::string>{"z/" + ordered[4], "z/" + ordered[5], "z/" + bmp_high});
  for (const auto& pk : ordered) {
    for (const auto& rk : ordered) CHECK(store->GetEntity("acct", "t", pk, rk).ok());
  }
}

TEST_CASE_TEMPLATE("store: a scan stops when its abandon callback says so, matching rows or not", B,
                   FileBackend, MemoryBackend, PostgresBackend) {
  TempDir dir;
  auto store = OpenStore<B>(dir);
  if (!store) return;  // no test database
  REQUIRE(store->CreateTable("acct", "t").ok());
  InsertRows(*store, "t", "p", 0, 200);
  ScanRequest req;
  size_t examined = 0, polls = 0, visited = 0;
  req.predicate = [&](const Entity&) {
    ++examined;
    return false;  // no row reaches the visitor: polls must not wait for one
  };
  req.abandon = [&] { return ++polls == 3; };
  auto visit = [&](EntityRow&) {
    ++visited;
    return Status::Ok();
  };
  std::optional<EntityKey> next;
  Status s = store->ScanRows("acct", "t", req, visit, &next);
  CHECK(s.code() == StatusCode::kBusy);
  CHECK(polls == 3);
  CHECK(examined == 2 * ScanRequest::kRowsPerAbandonPoll);
  CHECK(visited == 0);
  // Never abandoned: every row.
  req.predicate = {};
  req.abandon = [] { return false; };
  REQUIRE(store->ScanRows("acct", "t", req, visit, &next).ok());
  CHECK(visited == 200);
  CHECK_FALSE(next.has_value());
}

TEST_CASE_TEMPLATE("store: reads seek; their work does not grow with the table", B, FileBackend,
                   MemoryBackend) {
  TempDir dir;
  auto store = OpenStore<B>(dir, NoReaper());
  // The same partition "p" ends in r09900..r09999 in both tables; "big" has
  // 9,900 more rows before them in "p" and whole partitions around it.
  REQUIRE(store->CreateTable("acct", "small").ok());
  REQUIRE(store->CreateTable("acct", "big").ok());
  InsertRows(*store, "small", "p", 9900, 10000);
  InsertRows(*store, "big", "a", 0, 5000);
  InsertRows(*store, "big", "p", 0, 10000);
  InsertRows(*store, "big", "z", 0, 5000);

  auto range = [](std::optional<KeyBound> lo, std::optional<KeyBound> hi) {
    return KeyRange{std::move(lo), std::move(hi)};
  };
  std::vector<ScanRequest> requests;
  {
    ScanRequest r;  // a composite range inside the partition
    r.ranges = {range(KeyBound{"p", "r09990", true}, KeyBound{"p", "r09995", true})};
    requests.push_back(r);
    r.ranges = {range(KeyBound{"p", "r09989", false}, std::nullopt)};  // exclusive lower
    r.limit = 5;
    requests.push_back(r);
    r.ranges = {KeyRange::All()};  // a continuation deep into the partition
    r.start = EntityKey{"p", "r09990"};
    requests.push_back(r);
    r.ranges = {range(KeyBound{"p", std::nullopt, true}, KeyBound{"p", std::nullopt, true})};
    requests.push_back(r);  // the same inside a partition-only range
    r.ranges = {range(std::nullopt, KeyBound{"p", "r09993", false})};
    r.limit = 1000;
    requests.push_back(r);  // upper bound only, from the continuation
  }
  for (size_t i = 0; i < requests.size(); ++i) {
    CAPTURE(i);
    ScanResult small_res, big_res;
    // Warm the statement cache and the page cache first.
    REQUIRE(store->Scan("acct", "small", requests[i], &small_res).ok());
    REQUIRE(store->Scan("acct", "big", requests[i], &big_res).ok());
    SqliteStoreStats small = WorkOf(
        *store, [&] { REQUIRE(store->Scan("acct", "small", requests[i], &small_res).ok()); });
    SqliteStoreStats big =
        WorkOf(*store, [&] { REQUIRE(store->Scan("acct", "big", requests[i], &big_res).ok()); });
    CHECK(Keys(small_res.entities) == Keys(big_res.entities));
    CHECK_FALSE(small_res.entities.empty());
    CHECK(big.statements_run == small.statements_run);
    CHECK(big.statements_prepared == 0);
    // A scan that filtered instead of seeking would visit thousands of rows.
    CHECK(big.vm_steps <= small.vm_steps + 20);
  }
  auto get = [&](const std::string& table) {
    return WorkOf(*store, [&] { REQUIRE(store->GetEntity("acct", table, "p", "r09950").ok()); });
  };
  get("small");
  get("big");
  SqliteStoreStats small = get("small");
  SqliteStoreStats big = get("big");
  CHECK(big.vm_steps == small.vm_steps);
  CHECK(big.statements_run == 1);
}

TEST_CASE_TEMPLATE("store: prepared statements are cached", B, FileBackend, MemoryBackend) {
  TempDir dir;
  SqliteStoreOptions options = NoReaper();
  options.reader_pool_size = 1;  // so the second round hits the same reader
  auto store = OpenStore<B>(dir, options);
  REQUIRE(store->CreateTable("acct", "t").ok());
  auto round = [&](int i) {
    std::string rk = std::to_string(i);
    REQUIRE(store->Apply("acct", "t", {Insert("p", rk)}, nullptr, nullptr).ok());
    REQUIRE(store->Apply("acct", "t", {Op(WriteKind::kMerge, "p", rk, {})}, nullptr, nullptr).ok());
    REQUIRE(store->GetEntity("acct", "t", "p", rk).ok());
    ScanResult res;
    ScanRequest req;
    req.ranges = {KeyRange{KeyBound{"p", rk, true}, std::nullopt}};
    REQUIRE(store->Scan("acct", "t", req, &res).ok());
    REQUIRE(store->GetTable("acct", "t").ok());
  };
  SqliteStoreStats first = WorkOf(*store, [&] { round(0); });
  CHECK(first.statements_prepared > 0);
  SqliteStoreStats later = WorkOf(*store, [&] {
    for (int i = 1; i < 50; ++i) round(i);
  });
  CHECK(later.statements_prepared == 0);
  CHECK(later.statements_run >= 49 * 5);
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

// A full scan of acct/t on its own thread that stops inside its read
// transaction (holding a reader) at the first row until Release(), or 20 s.
class HeldScan {
 public:
  explicit HeldScan(SqliteStore& store) {
    thread_ = std::thread([this, &store] {
      ScanRequest req;
      req.limit = SIZE_MAX;
      req.predicate = [this](const Entity&) {
        std::unique_lock<std::mutex> lock(mu_);
        if (!scanning_) {
          scanning_ = true;
          cv_.notify_all();
          timed_out_ = !cv_.wait_for(lock, std::chrono::seconds(20), [this] { return released_; });
        }
        return true;
      };
      status_ = store.Scan("acct", "t", req, &result_);
    });
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return scanning_; });
  }
  ~HeldScan() {
    if (thread_.joinable()) Release();
  }

  // Lets the scan finish and waits for it.
  void Release() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      released_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  // After Release():
  bool timed_out() const { return timed_out_; }
  const Status& status() const { return status_; }
  const ScanResult& result() const { return result_; }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool scanning_ = false, released_ = false, timed_out_ = false;
  ScanResult result_;
  Status status_;
  std::thread thread_;
};

TEST_CASE("store(file): readers run beside the writer, on a snapshot") {
  TempDir dir;
  SqliteStoreOptions options = TestOptions();
  options.reader_pool_size = 2;
  auto store = OpenStore<FileBackend>(dir, options);
  REQUIRE(store->CreateTable("acct", "t").ok());
  InsertRows(*store, "t", "p", 0, 100);

  // A scan stops inside its read transaction (holding a reader) until the
  // main thread has read and written through other connections.
  HeldScan held(*store);
  // If reads or writes queued behind the held scan, the scan would time out
  // before these return.
  CHECK(store->GetEntity("acct", "t", "p", "r00050").ok());
  REQUIRE(
      store->Apply("acct", "t", {Insert("p", "r99999"), Insert("q", "1")}, nullptr, nullptr).ok());
  REQUIRE(store->Apply("acct", "t", {Op(WriteKind::kDelete, "p", "r00099", {})}, nullptr, nullptr)
              .ok());
  CHECK(store->GetEntity("acct", "t", "q", "1").ok());
  ScanResult now;
  REQUIRE(store->Scan("acct", "t", {}, &now).ok());
  CHECK(now.entities.size() == 101);
  held.Release();
  CHECK_FALSE(held.timed_out());
  REQUIRE(held.status().ok());
  // The held scan saw the table as of its start: the writes made meanwhile
  // are invisible to it, the deleted row is still there.
  REQUIRE(held.result().entities.size() == 100);
  CHECK(held.result().entities.back().row_key == "r00099");
}

TEST_CASE("store(file): point reads have their own readers and fall back to the pool") {
  TempDir dir;
  SqliteStoreOptions options = TestOptions();
  options.reader_pool_size = 1;
  options.point_reader_count = 1;
  options.point_reader_cache_bytes = 1 << 20;
  auto store = OpenStore<FileBackend>(dir, options);
  REQUIRE(store->CreateTable("acct", "t").ok());
  InsertRows(*store, "t", "p", 0, 100);

  SUBCASE("a scan holding the only pooled reader does not stop point reads") {
    HeldScan held(*store);
    // With no reader of its own, this read would wait for the scan's.
    CHECK(store->GetEntity("acct", "t", "p", "r00050").ok());
    REQUIRE(store->Apply("acct", "t", {Insert("q", "1")}, nullptr, nullptr).ok());
    CHECK(store->GetEntity("acct", "t", "q", "1").ok());
    held.Release();
    CHECK_FALSE(held.timed_out());
    CHECK(held.status().ok());
  }

  SUBCASE("a short scan may take the point reader, and sees what a pooled one sees") {
    ScanRequest req;
    req.ranges = {KeyRange{KeyBound{"p", std::nullopt, true}, KeyBound{"p", std::nullopt, true}}};
    req.limit = 10;
    req.start = EntityKey{"p", "r00040"};
    req.point_reader = true;
    ScanResult on_point;
    {
      HeldScan held(*store);
      // With the flag ignored, this scan would wait for the held one's reader.
      REQUIRE(store->Scan("acct", "t", req, &on_point).ok());
      held.Release();
      CHECK_FALSE(held.timed_out());
    }
    req.point_reader = false;
    ScanResult pooled;
    REQUIRE(store->Scan("acct", "t", req, &pooled).ok());
    REQUIRE(on_point.entities.size() == 10);
    CHECK(on_point.entities.front().row_key == "r00040");
    CHECK(on_point.entities == pooled.entities);
    CHECK(on_point.next == pooled.next);
  }

  SUBCASE("more concurrent point reads than point readers; each sees the writes before it") {
    constexpr int kThreads = 6, kRounds = 150;
    std::atomic<int> stale{0}, failed{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        const std::string rk = "w" + std::to_string(t);
        for (int i = 0; i < kRounds; ++i) {
          if (!store
                   ->Apply("acct", "t",
                           {Op(WriteKind::kInsertOrReplace, "p", rk, {{"N", Value::Int32(i)}})},
                           nullptr, nullptr)
                   .ok()) {
            ++failed;
            continue;
          }
          auto got = store->GetEntity("acct", "t", "p", rk);
          if (!got.ok()) {
            ++failed;
          } else if (got.value().properties.empty() ||
                     got.value().properties[0].value != Value::Int32(i)) {
            ++stale;
          }
        }
      });
    }
    for (auto& th : threads) th.join();
    CHECK(failed == 0);
    CHECK(stale == 0);
  }
}

TEST_CASE("store(file): readers open as reads need them, never more than the pool's") {
  TempDir dir;
  SqliteStoreOptions options = TestOptions();
  options.reader_pool_size = 3;
  options.point_reader_count = 2;
  auto store = OpenStore<FileBackend>(dir, options);
  // One reader at start-up: the rest cost start-up time only if never used.
  CHECK(store->GetStats().readers_open == 1);
  CHECK(store->GetStats().point_readers_open == 0);
  REQUIRE(store->CreateTable("acct", "t").ok());
  InsertRows(*store, "t", "p", 0, 50);

  // Reads one after another share what is open.
  for (int i = 0; i < 20; ++i) {
    CHECK(store->GetEntity("acct", "t", "p", "r00010").ok());
    ScanResult result;
    ScanRequest req;
    req.limit = 5;
    REQUIRE(store->Scan("acct", "t", req, &result).ok());
  }
  CHECK(store->GetStats().readers_open == 1);
  CHECK(store->GetStats().point_readers_open == 1);

  // Concurrent scans open more, up to the pool's size; a fourth waits for one.
  auto held1 = std::make_unique<HeldScan>(*store);
  HeldScan held2(*store);
  HeldScan held3(*store);
  CHECK(store->GetStats().readers_open == 3);
  CHECK(store->GetEntity("acct", "t", "p", "r00020").ok());  // a point reader
  auto fourth = std::async(std::launch::async, [&] {
    ScanResult result;
    ScanRequest req;
    req.limit = 5;
    return store->Scan("acct", "t", req, &result);
  });
  CHECK(fourth.wait_for(std::chrono::milliseconds(200)) == std::future_status::timeout);
  CHECK(store->GetStats().readers_open == 3);
  held1->Release();
  CHECK_FALSE(held1->timed_out());
  CHECK(fourth.get().ok());
  held2.Release();
  held3.Release();
  CHECK(store->GetStats().readers_open == 3);
  CHECK(store->GetStats().point_readers_open == 1);
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

}  // namespace
}  // namespace cerulean::storage

namespace cerulean::storage {
namespace {

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
    // No busy wait: the refusal does not sit out busy_timeout (5 s).
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(2));
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
