// PostgresStore cases beyond the shared Store suite (sqlite_store_test.cc
// runs that on PostgreSQL too): index range scans, several stores over one
// database (as several server nodes are), connection loss. They need a test
// database (CERULEAN_TEST_DATABASE, storage/postgres/pg_test_util.h) and skip without.
#include "storage/postgres/postgres_store.h"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
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

TEST_CASE("postgres: lost connections are replaced; an unreachable database is kBusy") {
  test::PgTestStore store = test::OpenPgTestStore();
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
  CHECK(store->Healthy());

  PostgresStoreOptions options;
  options.url = "postgresql://nobody@127.0.0.1:1/none";
  auto unreachable = PostgresStore::Open(options);
  REQUIRE_FALSE(unreachable.ok());
  CHECK(unreachable.status().code() == StatusCode::kBusy);
}

TEST_CASE("postgres: snapshots answer kNotSupported") {
  test::PgTestStore store = test::OpenPgTestStore();
  if (!store) return;
  SnapshotInfo info;
  CHECK(store->SaveSnapshot("acct", "s", &info).code() == StatusCode::kNotSupported);
  RestoreStats stats;
  CHECK(store->RestoreSnapshot("acct", "s", &stats).code() == StatusCode::kNotSupported);
  std::vector<SnapshotInfo> list;
  CHECK(store->ListSnapshots("acct", &list).code() == StatusCode::kNotSupported);
  CHECK(store->DeleteSnapshot("acct", "s").code() == StatusCode::kNotSupported);
}

}  // namespace
}  // namespace cerulean::storage
