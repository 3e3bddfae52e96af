// The Store suite (see sqlite_store_test.cc): writes, their conditions and
// atomicity, group commit and ApplyAsync's callbacks.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "storage/sqlite/sqlite_store.h"
#include "storage/sqlite/sqlite_test_util.h"

namespace cerulean::storage {
namespace {

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
  for (const auto& [last, code_of_last] : last_ops) {
    // doctest's lambdas take no structured binding (clang 14).
    const StatusCode code = code_of_last;
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
      {{Insert("p", "n1"), Insert("q", "n2"), Insert("p", "c")}, StatusCode::kAlreadyExists, 2},
      {{Insert("p", "n1"), Insert("p", "n1")}, StatusCode::kAlreadyExists, 1},
      {{Insert("p", "c"), Op(WriteKind::kUpdate, "p", "nope", {})}, StatusCode::kAlreadyExists, 0},
      {{Insert("p", "n1"), Insert("p", "c"), Op(WriteKind::kDelete, "p", "nope", {})},
       StatusCode::kAlreadyExists,
       1},
      {{Insert("p", "n1"), Op(WriteKind::kUpdate, "p", "nope", {})}, StatusCode::kNotFound, 1},
      {{Insert("p", "c")}, StatusCode::kAlreadyExists, 0},
  };
  for (const auto& [ops, code_of_ops, index_of_ops] : orders) {
    const StatusCode code = code_of_ops;  // doctest's lambdas take no structured binding (clang 14)
    const size_t index = index_of_ops;
    CAPTURE(static_cast<int>(code));
    CAPTURE(index);
    CHECK(store->Apply("acct", "t", ops, &res, &err).code() == code);
    CHECK(err.index == index);
    CHECK(ScanAll(*store, "t", {}) == snapshot);
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
  for (const auto& [row_key, status] : outcomes) {
    const std::string& rk = row_key;  // doctest's lambdas take no structured binding (clang 14)
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
  for (const auto& [tag_of_out, out] : outcomes) {
    const int tag = tag_of_out;  // doctest's lambdas take no structured binding (clang 14)
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

TEST_CASE_TEMPLATE("store: WriteEpoch grows with every write that changes a row, once answered", B,
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
  REQUIRE(store->CreateTable("acct", "u").ok());
  wrote("CreateTable");
  REQUIRE(store->ResetAccount("acct").ok());
  wrote("ResetAccount");
  // A write transaction that changes no row (a reset of an account with no
  // table; the reaper's look for dropped tables, as at every start) leaves
  // every read as it was, and the epoch with it.
  REQUIRE(store->ResetAccount("acct").ok());
  CHECK(epoch() == e);
}

}  // namespace
}  // namespace cerulean::storage
