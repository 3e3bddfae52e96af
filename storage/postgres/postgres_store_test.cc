// PostgresStore cases beyond the shared Store suite (sqlite_store_test.cc
// runs that on PostgreSQL too): index range scans, several stores over one
// database (as several server nodes are), connection loss. They need a test
// database (CERULEAN_TEST_DATABASE, storage/postgres/pg_test_util.h) and skip without.
// A database that stops answering: pg_outage_test.cc.
#include "storage/postgres/postgres_store.h"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "storage/postgres/pg_test_util.h"
#include "storage/test_util.h"

namespace cerulean::storage {
namespace {

using test::Insert;
using test::Keys;
using test::Op;
using test::ScanAll;

// Runs `sql` on the test database, in `schema`.
void RunSql(const std::string& schema, const std::string& sql) {
  std::unique_ptr<PgConnection> c;
  REQUIRE(PgConnection::Open(test::PgTestUrl(), schema, &c).ok());
  Status s = c->Command(sql);
  REQUIRE_MESSAGE(s.ok(), s.ToString());
}

std::string Joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

TEST_CASE("postgres: key filters are index range scans (EXPLAIN)") {
  test::PgTestStore store = test::OpenPgTestStore();
  if (!store) return;
  REQUIRE(store->CreateTable("acct", "t").ok());
  // Enough rows over enough partitions that a sequential scan would be the
  // cheaper plan for anything but a range of the index.
  for (int p = 0; p < 20; ++p) {
    std::vector<WriteOp> ops;
    for (int r = 0; r < 500; ++r) {
      ops.push_back(Insert("p" + std::to_string(100 + p), "r" + std::to_string(1000 + r)));
    }
    REQUIRE(store->Apply("acct", "t", ops, nullptr, nullptr).ok());
  }
  RunSql(store.get_deleter().schema, "ANALYZE cerulean_entities");
  const std::vector<KeyRange> ranges = {
      // RowKey range inside a partition: pk = $2 AND rk >= $3 AND rk < $5.
      KeyRange{KeyBound{"p105", "r1100", true}, KeyBound{"p105", "r1200", false}},
      // A whole partition.
      KeyRange{KeyBound{"p107", std::nullopt, true}, KeyBound{"p107", std::nullopt, true}},
      // Composite bounds across partitions: (pk, rk) row values.
      KeyRange{KeyBound{"p103", "r1400", false}, KeyBound{"p104", "r1010", true}},
      // A continuation (lower bound only) and an upper bound only.
      KeyRange{KeyBound{"p110", "r1300", true}, std::nullopt},
      KeyRange{std::nullopt, KeyBound{"p102", std::nullopt, false}},
  };
  for (const KeyRange& range : ranges) {
    auto plan = store->ExplainScanForTesting("acct", "t", range);
    REQUIRE_MESSAGE(plan.ok(), plan.status().ToString());
    std::string text = Joined(*plan);
    CAPTURE(range.ToString());
    CAPTURE(text);
    CHECK(text.find("Index") != std::string::npos);
    CHECK((text.find("Index Scan") != std::string::npos ||
           text.find("Index Only Scan") != std::string::npos));
    CHECK(text.find("Seq Scan") == std::string::npos);
    CHECK(text.find("Sort") == std::string::npos);  // rows come in index order
  }
  // And the scans return what the ranges hold.
  ScanRequest req;
  req.ranges = {ranges[0]};
  ScanResult res;
  REQUIRE(store->Scan("acct", "t", req, &res).ok());
  CHECK(res.entities.size() == 100);
}

TEST_CASE("postgres: two stores over one database see each other's writes") {
  test::PgTestStore a = test::OpenPgTestStore();
  if (!a) return;
  test::PgTestStore b = test::OpenPgTestStore({}, a.get_deleter().schema);
  REQUIRE(a->CreateTable("acct", "t").ok());
  CHECK(b->GetTable("acct", "T").ok());
  CHECK(b->CreateTable("acct", "t").code() == StatusCode::kTableAlreadyExists);
  std::vector<WriteOp> ops;
  for (int i = 0; i < 30; ++i) ops.push_back(Insert("p", "r" + std::to_string(10 + i)));
  REQUIRE(a->Apply("acct", "t", ops, nullptr, nullptr).ok());
  // A continuation from one node resumes on the other.
  ScanRequest req;
  req.limit = 10;
  ScanResult page;
  REQUIRE(a->Scan("acct", "t", req, &page).ok());
  REQUIRE(page.next);
  req.start = page.next;
  ScanResult rest;
  req.limit = 100;
  REQUIRE(b->Scan("acct", "t", req, &rest).ok());
  CHECK(rest.entities.size() == 20);
  CHECK(rest.entities.front().row_key == "r20");
  // Documents changed on one are seen by the other.
  REQUIRE(a->SetTableAcl("acct", "t", "<acl/>").ok());
  CHECK(*b->GetTableAcl("acct", "t") == "<acl/>");
  REQUIRE(b->SetServiceProperties("acct", "cors").ok());
  CHECK(*a->GetServiceProperties("acct") == "cors");
  // A table dropped on one is gone on the other, and its rows are reaped.
  REQUIRE(b->DeleteTable("acct", "t").ok());
  CHECK(a->GetEntity("acct", "t", "p", "r10").status().code() == StatusCode::kTableNotFound);
  // Whichever node takes the reaper's lock (b's reaper was woken by the
  // drop; a's pass then leaves the work to it).
  REQUIRE(a->ReapNowForTesting().ok());
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while ((*b->CountEntityRowsForTesting() != 0 || *b->CountPendingReapsForTesting() != 0) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK(*b->CountEntityRowsForTesting() == 0);
  CHECK(*b->CountPendingReapsForTesting() == 0);
}

TEST_CASE("postgres: the inserts of an Apply, written together, keep op-order refusals") {
  test::PgTestStore store = test::OpenPgTestStore();
  if (!store) return;
  REQUIRE(store->CreateTable("acct", "t").ok());
  // 250 new rows (three multi-row statements), one of them by an upsert,
  // beside a merge of an existing row.
  REQUIRE(store->Apply("acct", "t", {Insert("p", "r0170")}, nullptr, nullptr).ok());
  std::vector<WriteOp> ops;
  for (int i = 0; i < 250; ++i) {
    char rk[8];
    std::snprintf(rk, sizeof rk, "r%04d", 1000 + i);
    ops.push_back(Insert("p", rk, {{"i", Value::Int32(i)}}));
  }
  ops[7] = Op(WriteKind::kInsertOrReplace, "p", "r1007", {{"i", Value::Int32(7)}});
  ops.push_back(Op(WriteKind::kMerge, "p", "r0170", {{"m", Value::Int32(1)}}));
  ApplyResult res;
  ApplyError err;
  REQUIRE(store->Apply("acct", "t", ops, &res, &err).ok());
  REQUIRE(res.timestamps.size() == ops.size());
  std::vector<Entity> rows = ScanAll(*store, "t");
  REQUIRE(rows.size() == 251);
  CHECK(rows.front().properties == std::vector<Property>{{"m", Value::Int32(1)}});
  for (int i = 0; i < 250; ++i) {
    const Entity& e = rows[static_cast<size_t>(i) + 1];
    CHECK(e.row_key == ops[static_cast<size_t>(i)].entity.row_key);
    CHECK(e.timestamp == res.timestamps[static_cast<size_t>(i)]);
    CHECK(e.properties == std::vector<Property>{{"i", Value::Int32(i)}});
  }

  // A row that exists is met by the statement that writes many; the
  // refusal still names its op, and nothing of the Apply stays.
  std::vector<WriteOp> again;
  for (int i = 0; i < 150; ++i) {
    char rk[8];
    std::snprintf(rk, sizeof rk, "s%04d", i);
    again.push_back(Insert("p", rk));
  }
  again[120] = Insert("p", "r1100");
  CHECK(store->Apply("acct", "t", again, &res, &err).code() == StatusCode::kAlreadyExists);
  CHECK(err.index == 120);
  CHECK(ScanAll(*store, "t").size() == 251);
  // Inserted again without it: all 150 land.
  again[120] = Insert("p", "s0120");
  REQUIRE(store->Apply("acct", "t", again, &res, &err).ok());
  CHECK(ScanAll(*store, "t").size() == 401);
}

TEST_CASE("postgres: concurrent If-Match writes from two stores: exactly one wins") {
  test::PgTestStore a = test::OpenPgTestStore();
  if (!a) return;
  test::PgTestStore b = test::OpenPgTestStore({}, a.get_deleter().schema);
  REQUIRE(a->CreateTable("acct", "t").ok());
  ApplyResult res;
  REQUIRE(a->Apply("acct", "t", {Insert("p", "r", {{"n", Value::Int32(0)}})}, &res, nullptr).ok());
  int64_t etag = res.timestamps[0];
  std::set<int64_t> etags = {etag};
  constexpr int kRounds = 60;
  for (int round = 0; round < kRounds; ++round) {
    CAPTURE(round);
    Status sa, sb;
    ApplyResult ra, rb;
    std::atomic<int> ready{0};
    auto update = [&](PostgresStore* store, int n, Status* s, ApplyResult* r) {
      ++ready;
      while (ready < 2) {
      }
      *s = store->Apply("acct", "t",
                        {Op(WriteKind::kMerge, "p", "r", {{"n", Value::Int32(n)}}, etag)}, r,
                        nullptr);
    };
    std::thread ta(update, a.get(), 2 * round, &sa, &ra);
    std::thread tb(update, b.get(), 2 * round + 1, &sb, &rb);
    ta.join();
    tb.join();
    REQUIRE(sa.ok() != sb.ok());
    const Status& loser = sa.ok() ? sb : sa;
    CHECK(loser.code() == StatusCode::kConditionFailed);
    int64_t won = sa.ok() ? ra.timestamps[0] : rb.timestamps[0];
    CHECK(won > etag);
    CHECK(etags.insert(won).second);
    auto e = b->GetEntity("acct", "t", "p", "r");
    REQUIRE(e.ok());
    CHECK(e->timestamp == won);
    CHECK(e->Find("n")->int32() == (sa.ok() ? 2 * round : 2 * round + 1));
    etag = won;
  }

  // Unconditional writes of one entity from both at once: every write gets
  // its own ETag, even in the same clock tick on both nodes.
  std::vector<int64_t> written[2];
  std::vector<std::thread> threads;
  for (int node = 0; node < 2; ++node) {
    threads.emplace_back([&, node] {
      PostgresStore* store = node == 0 ? a.get() : b.get();
      for (int i = 0; i < 100; ++i) {
        ApplyResult r;
        WriteOp op = Op(WriteKind::kInsertOrReplace, "p", "r", {{"i", Value::Int32(i)}});
        if (store->Apply("acct", "t", {op}, &r, nullptr).ok()) {
          written[node].push_back(r.timestamps[0]);
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  REQUIRE(written[0].size() == 100);
  REQUIRE(written[1].size() == 100);
  std::set<int64_t> unique(written[0].begin(), written[0].end());
  unique.insert(written[1].begin(), written[1].end());
  CHECK(unique.size() == 200);
}

TEST_CASE("postgres: concurrent merges from two stores lose no property") {
  test::PgTestStore a = test::OpenPgTestStore();
  if (!a) return;
  test::PgTestStore b = test::OpenPgTestStore({}, a.get_deleter().schema);
  REQUIRE(a->CreateTable("acct", "t").ok());
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int node = 0; node < 2; ++node) {
    threads.emplace_back([&, node] {
      PostgresStore* store = node == 0 ? a.get() : b.get();
      for (int i = 0; i < 40; ++i) {
        std::string name = "n" + std::to_string(node) + "_" + std::to_string(i);
        if (!store
                 ->Apply("acct", "t",
                         {Op(WriteKind::kInsertOrMerge, "p", "r", {{name, Value::Int32(i)}})},
                         nullptr, nullptr)
                 .ok()) {
          ++failures;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(failures == 0);
  auto e = a->GetEntity("acct", "t", "p", "r");
  REQUIRE(e.ok());
  CHECK(e->properties.size() == 80);
}

TEST_CASE("postgres: a table dropped and created again by another node gets the writes") {
  // Connections remember table ids; each use re-checks them in its own
  // transaction.
  test::PgTestStore a = test::OpenPgTestStore();
  if (!a) return;
  test::PgTestStore b = test::OpenPgTestStore({}, a.get_deleter().schema);
  REQUIRE(a->CreateTable("acct", "t").ok());
  REQUIRE(a->Apply("acct", "t", {Insert("p", "r1")}, nullptr, nullptr).ok());
  ScanResult page;
  REQUIRE(a->Scan("acct", "t", ScanRequest{}, &page).ok());
  CHECK(page.entities.size() == 1);

  REQUIRE(b->DeleteTable("acct", "t").ok());
  CHECK(a->Apply("acct", "t", {Insert("p", "r2")}, nullptr, nullptr).code() ==
        StatusCode::kTableNotFound);
  CHECK(a->Scan("acct", "t", ScanRequest{}, &page).code() == StatusCode::kTableNotFound);
  REQUIRE(b->CreateTable("acct", "t").ok());
  REQUIRE(
      b->Apply("acct", "t", {Insert("p", "r3", {Property{"v", Value::Int32(1)}})}, nullptr, nullptr)
          .ok());
  // An upsert of b's row replaces it (a read it under the new id), and an
  // insert lands in the new table.
  REQUIRE(a->Apply("acct", "t",
                   {Op(WriteKind::kInsertOrReplace, "p", "r3", {Property{"v", Value::Int32(2)}}),
                    Insert("p", "r4")},
                   nullptr, nullptr)
              .ok());
  REQUIRE(b->Scan("acct", "t", ScanRequest{}, &page).ok());
  CHECK(Keys(page.entities) == std::vector<std::string>{"p/r3", "p/r4"});
  auto r3 = b->GetEntity("acct", "t", "p", "r3");
  REQUIRE(r3.ok());
  REQUIRE(r3->properties.size() == 1);
  CHECK(r3->properties[0].value.int32() == 2);
  REQUIRE(a->Scan("acct", "t", ScanRequest{}, &page).ok());
  CHECK(Keys(page.entities) == std::vector<std::string>{"p/r3", "p/r4"});
}

TEST_CASE("postgres: lost connections are replaced, and the store stays healthy") {
  std::mutex log_mu;
  std::string logged;
  PostgresStoreOptions options;
  options.log = [&](const std::string& line) {
    std::lock_guard<std::mutex> lock(log_mu);
    logged += line + "\n";
  };
  test::PgTestStore store = test::OpenPgTestStore(options);
  if (!store) return;
  REQUIRE(store->CreateTable("acct", "t").ok());
  REQUIRE(store->Apply("acct", "t", {Insert("p", "r")}, nullptr, nullptr).ok());
  // The server ends every connection of this store (as a restart does).
  RunSql("",
         "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = "
         "'cerulean' AND pid <> pg_backend_pid()");
  // Each pooled connection notices on its next use and reconnects.
  for (int i = 0; i < 20; ++i) {
    CHECK(store->GetEntity("acct", "t", "p", "r").ok());
    CHECK(store->Apply("acct", "t", {Insert("q", std::to_string(i))}, nullptr, nullptr).ok());
  }
  // The prober's own connection went too: it opens another at once (within
  // two probe intervals) rather than call the database unreachable.
  std::this_thread::sleep_for(std::chrono::seconds(1));
  CHECK(store->Healthy());
  std::lock_guard<std::mutex> lock(log_mu);
  CHECK_MESSAGE(logged.find("unreachable") == std::string::npos, logged);
}

TEST_CASE("postgres: Delete Table and reset leave the rows to the reaper, one node at a time") {
  PostgresStoreOptions options;
  options.background_reaping = false;
  options.reap_chunk_rows = 100;
  test::PgTestStore a = test::OpenPgTestStore(options);
  if (!a) return;
  test::PgTestStore b = test::OpenPgTestStore(options, a.get_deleter().schema);
  for (const char* table : {"big", "other"}) {
    REQUIRE(a->CreateTable("acct", table).ok());
    for (int p = 0; p < 10; ++p) {
      std::vector<WriteOp> ops;
      for (int r = 0; r < 100; ++r)
        ops.push_back(Insert("p" + std::to_string(p), std::to_string(r)));
      REQUIRE(a->Apply("acct", table, ops, nullptr, nullptr).ok());
    }
  }
  // The calls return with every row still there: none was visited.
  REQUIRE(a->DeleteTable("acct", "big").ok());
  REQUIRE(b->ResetAccount("acct").ok());
  CHECK(a->CountEntityRowsForTesting().value() == 2000);
  CHECK(a->CountPendingReapsForTesting().value() == 2);

  // While another node reaps (holds the reaper's advisory lock,
  // kReaperLockKey in postgres_internal.h), a node's pass leaves the work to it.
  std::unique_ptr<PgConnection> other;
  REQUIRE(PgConnection::Open(test::PgTestUrl(), a.get_deleter().schema, &other).ok());
  PgResult r;
  REQUIRE(other->Exec("SELECT pg_advisory_lock($1)", PgParams().Int64(0x6365727532), &r).ok());
  REQUIRE(a->ReapNowForTesting().ok());
  REQUIRE(b->ReapNowForTesting().ok());
  CHECK(a->CountEntityRowsForTesting().value() == 2000);
  REQUIRE(other->Exec("SELECT pg_advisory_unlock($1)", PgParams().Int64(0x6365727532), &r).ok());
  REQUIRE(b->ReapNowForTesting().ok());
  CHECK(a->CountEntityRowsForTesting().value() == 0);
  CHECK(a->CountPendingReapsForTesting().value() == 0);
}

// An account as restores must bring it back: per table (name as created)
// its ACL and every entity (timestamps included); the service properties.
struct AccountState {
  std::string props;
  std::map<std::string, std::pair<std::string, std::vector<Entity>>> tables;
  bool operator==(const AccountState&) const = default;
};

AccountState StateOf(Store& store, const std::string& account) {
  AccountState state;
  state.props = store.GetServiceProperties(account).value();
  auto names = test::TableNames(store, account);
  REQUIRE(names.ok());
  for (const auto& t : *names) {
    ScanRequest all;
    all.limit = SIZE_MAX;
    ScanResult r;
    REQUIRE(store.Scan(account, t, all, &r).ok());
    state.tables[t] = {store.GetTableAcl(account, t).value(), std::move(r.entities)};
  }
  return state;
}

TEST_CASE("postgres: a snapshot saved by one store is restored by another, atomically") {
  test::PgTestStore a = test::OpenPgTestStore();
  if (!a) return;
  test::PgTestStore b = test::OpenPgTestStore({}, a.get_deleter().schema);
  const Property v{"v", Value::String("a")};
  REQUIRE(a->CreateTable("acct", "Orders").ok());
  REQUIRE(a->CreateTable("acct", "kept").ok());
  REQUIRE(a->CreateTable("other", "Orders").ok());
  std::vector<WriteOp> ops;
  for (int i = 0; i < 50; ++i)
    ops.push_back(Insert("p" + std::to_string(i % 3), std::to_string(i), {v}));
  for (size_t i = 0; i < ops.size(); i += 10) {
    std::vector<WriteOp> chunk(ops.begin() + static_cast<ptrdiff_t>(i),
                               ops.begin() + static_cast<ptrdiff_t>(i + 10));
    REQUIRE(a->Apply("acct", "Orders", chunk, nullptr, nullptr).ok());
  }
  REQUIRE(a->Apply("acct", "kept", {Insert("k", "1")}, nullptr, nullptr).ok());
  REQUIRE(a->SetTableAcl("acct", "Orders", "<acl>1</acl>").ok());
  REQUIRE(a->SetServiceProperties("acct", "<props>1</props>").ok());
  const AccountState before = StateOf(*a, "acct");
  const AccountState other = StateOf(*a, "other");

  SnapshotInfo info;
  REQUIRE(a->SaveSnapshot("acct", "fixture", &info).ok());
  CHECK(info.name == "fixture");
  CHECK(info.tables == 2);
  CHECK(info.entities == 51);

  // Changes from both stores.
  const Property changed{"v", Value::String("changed")};
  REQUIRE(b->Apply("acct", "Orders", {Op(WriteKind::kInsertOrReplace, "p0", "0", {changed})},
                   nullptr, nullptr)
              .ok());
  REQUIRE(
      a->Apply("acct", "Orders", {Op(WriteKind::kDelete, "p1", "1", {})}, nullptr, nullptr).ok());
  REQUIRE(b->Apply("acct", "Orders", {Insert("new", "1")}, nullptr, nullptr).ok());
  REQUIRE(b->DeleteTable("acct", "kept").ok());
  REQUIRE(a->CreateTable("acct", "Extra").ok());
  REQUIRE(a->SetTableAcl("acct", "Orders", "<acl>2</acl>").ok());
  REQUIRE(b->SetServiceProperties("acct", "<props>2</props>").ok());
  REQUIRE(!(StateOf(*a, "acct") == before));

  RestoreStats stats;
  REQUIRE(b->RestoreSnapshot("acct", "fixture", &stats).ok());
  CHECK(StateOf(*a, "acct") == before);
  CHECK(StateOf(*b, "acct") == before);
  CHECK(StateOf(*a, "other") == other);
  CHECK(stats.tables_copied == 1);   // "kept", dropped since
  CHECK(stats.tables_patched == 1);  // "Orders"
  CHECK(stats.tables_kept == 0);
  CHECK(stats.entities_copied == 3);  // kept/1, Orders p0/0 and p1/1

  // Nothing written since: nothing copied.
  REQUIRE(a->RestoreSnapshot("acct", "fixture", &stats).ok());
  CHECK(stats.tables_kept == 2);
  CHECK(stats.tables_patched + stats.tables_copied + stats.entities_copied == 0);

  // Writes after a restore get timestamps above the restored ones.
  REQUIRE(
      a->Apply("acct", "Orders", {Op(WriteKind::kMerge, "p0", "0", {changed})}, nullptr, nullptr)
          .ok());
  auto after = b->GetEntity("acct", "Orders", "p0", "0");
  REQUIRE(after.ok());
  CHECK(after->timestamp > before.tables.at("Orders").second.front().timestamp);

  // Writers wait for a restore: each sees the table before or after it,
  // never part of it.
  std::atomic<bool> stop{false};
  std::atomic<int> writes{0};
  std::thread writer([&] {
    for (int i = 0; !stop; ++i) {
      Status s = b->Apply("acct", "Orders", {Insert("w", std::to_string(i))}, nullptr, nullptr);
      if (s.ok()) ++writes;
    }
  });
  for (int round = 0; round < 5; ++round) {
    REQUIRE(a->RestoreSnapshot("acct", "fixture", &stats).ok());
  }
  stop = true;
  writer.join();
  CHECK(writes > 0);
  REQUIRE(a->RestoreSnapshot("acct", "fixture", &stats).ok());
  CHECK(StateOf(*b, "acct") == before);
}

TEST_CASE("postgres: snapshots listed in byte order; a deleted or replaced one's rows are reaped") {
  PostgresStoreOptions options;
  options.background_reaping = false;
  test::PgTestStore store = test::OpenPgTestStore(options);
  if (!store) return;
  REQUIRE(store->CreateTable("acct", "t").ok());
  REQUIRE(store->Apply("acct", "t", {Insert("p", "1")}, nullptr, nullptr).ok());
  REQUIRE(store->SaveSnapshot("acct", "two", nullptr).ok());
  REQUIRE(store->Apply("acct", "t", {Insert("p", "2")}, nullptr, nullptr).ok());
  REQUIRE(store->SaveSnapshot("acct", "one", nullptr).ok());
  REQUIRE(store->SaveSnapshot("acct", "two", nullptr).ok());  // replaced: now 2 rows
  REQUIRE(store->SaveSnapshot("acct", "B", nullptr).ok());

  std::vector<SnapshotInfo> list;
  REQUIRE(store->ListSnapshots("acct", &list).ok());
  REQUIRE(list.size() == 3);
  CHECK(list[0].name == "B");  // bytewise order, whatever the collation
  CHECK(list[1].name == "one");
  CHECK(list[2].name == "two");
  CHECK(list[2].entities == 2);
  CHECK(list[2].tables == 1);
  CHECK(list[2].created > 0);
  REQUIRE(store->DeleteSnapshot("acct", "one").ok());
  REQUIRE(store->DeleteSnapshot("acct", "B").ok());
  // Live rows, and the saved rows of "two": the others' are reaped.
  REQUIRE(store->ReapNowForTesting().ok());
  CHECK(store->CountEntityRowsForTesting().value() == 4);
  CHECK(store->CountPendingReapsForTesting().value() == 0);
}

}  // namespace
}  // namespace cerulean::storage
