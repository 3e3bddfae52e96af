// The Store suite (see sqlite_store_test.cc): point reads and scans, key
// order, continuations, and the work a read does.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "storage/codec.h"
#include "storage/sqlite/sqlite_store.h"
#include "storage/sqlite/sqlite_test_util.h"

namespace cerulean::storage {
namespace {

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

}  // namespace
}  // namespace cerulean::storage
