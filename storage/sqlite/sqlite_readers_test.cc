// The file store's reader connections: a pool beside the writer, point
// readers, opened as reads need them; the in-memory store's one connection,
// which a scan hands over between rows to whoever waits for it.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "storage/sqlite/sqlite_store.h"
#include "storage/sqlite/sqlite_test_util.h"

namespace cerulean::storage {
namespace {

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

// The row key InsertRows gives row i.
std::string RowKeyOf(int i) {
  char rk[16];
  std::snprintf(rk, sizeof rk, "r%05d", i);
  return rk;
}

// Runs `fn` on its own thread; Wait() waits for it to return (20 s at most,
// then false: a hang guard, not a timing).
class Background {
 public:
  template <typename Fn>
  explicit Background(Fn fn) {
    thread_ = std::thread([this, fn = std::move(fn)] {
      fn();
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
      cv_.notify_all();
    });
  }
  ~Background() { thread_.join(); }
  bool Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(20), [this] { return done_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

// Scans acct/t (`request`) and, at its first row, runs `fn` on another
// thread and lets it wait for the connection the scan holds; the visitor of
// the second row then waits for `fn` to have returned. Sets *went_first iff
// it had (so the scan handed the connection over in between), and returns
// the row keys visited and the scan's status.
Status ScanAround(SqliteStore& store, const ScanRequest& request, const std::function<void()>& fn,
                  bool* went_first, std::vector<std::string>* keys,
                  std::optional<EntityKey>* next) {
  std::unique_ptr<Background> other;
  *went_first = false;
  Status s = store.ScanRows(
      "acct", "t", request,
      [&](EntityRow& row) {
        keys->push_back(std::string(row.row_key));
        if (keys->size() == 1) {
          other = std::make_unique<Background>(fn);
          while (store.GetStats().writer_waiters == 0) std::this_thread::yield();
        } else if (keys->size() == 2) {
          *went_first = other->Wait();
        }
        return Status::Ok();
      },
      next);
  if (other != nullptr) other->Wait();
  return s;
}

TEST_CASE("store(memory): point reads and writes go before a scan's next row") {
  TempDir dir;
  auto store = OpenStore<MemoryBackend>(dir);
  REQUIRE(store->CreateTable("acct", "t").ok());
  InsertRows(*store, "t", "p", 0, 100);
  ScanRequest req;
  req.limit = 60;
  bool went_first = false;
  std::vector<std::string> keys;
  std::optional<EntityKey> next;

  SUBCASE("a point read") {
    Status read;
    REQUIRE(ScanAround(
                *store, req, [&] { read = store->GetEntity("acct", "t", "p", "r00050").status(); },
                &went_first, &keys, &next)
                .ok());
    CHECK(went_first);
    CHECK(read.ok());
    // The page is whole: no row twice, none left out, the budget kept.
    REQUIRE(keys.size() == 60);
    for (int i = 0; i < 60; ++i) CHECK(keys[i] == RowKeyOf(i));
    REQUIRE(next.has_value());
    CHECK(next->row_key == "r00060");
    CHECK(store->GetStats().scan_handovers >= 1);
  }

  SUBCASE("a write; the rest of the page is read as the write left the table") {
    Status wrote;
    REQUIRE(ScanAround(
                *store, req,
                [&] {
                  wrote = store->Apply("acct", "t",
                                       {Op(WriteKind::kDelete, "p", "r00000", {}),
                                        Op(WriteKind::kDelete, "p", "r00030", {}),
                                        Insert("p", "r00030x"), Insert("p", "r00040x")},
                                       nullptr, nullptr);
                },
                &went_first, &keys, &next)
                .ok());
    CHECK(went_first);
    CHECK(wrote.ok());
    // r00000 was read before the write, r00030 was deleted before it was
    // reached, the inserted keys after the scan's position are read in order.
    std::vector<std::string> want;
    for (int i = 0; i < 59; ++i) {
      if (i != 30) want.push_back(RowKeyOf(i));
      if (i == 30) want.push_back("r00030x");
      if (i == 40) want.push_back("r00040x");
    }
    CHECK(keys == want);
    REQUIRE(next.has_value());
    CHECK(next->row_key == "r00059");
  }

  SUBCASE("a table dropped while the scan waits fails the scan, even if created again") {
    Status dropped, created;
    Status s = ScanAround(
        *store, req,
        [&] {
          dropped = store->DeleteTable("acct", "t");
          created = store->CreateTable("acct", "t");
        },
        &went_first, &keys, &next);
    CHECK(dropped.ok());
    CHECK(created.ok());
    CHECK(s.code() == StatusCode::kTableNotFound);
    CHECK(keys.size() == 1);
  }
}

TEST_CASE("store(memory): a scan handing the connection over reads what it reads alone") {
  TempDir dir;
  auto store = OpenStore<MemoryBackend>(dir);
  REQUIRE(store->CreateTable("acct", "t").ok());
  for (int p = 0; p < 5; ++p) InsertRows(*store, "t", "p" + std::to_string(p), 0, 10);
  // Random ranges (bounds within one partition or across, with and without
  // row keys), lists of partitions, starts, limits and a predicate.
  std::mt19937 rng(7);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  auto bound = [&]() -> std::optional<KeyBound> {
    if (pick(5) == 0) return std::nullopt;
    KeyBound b{"p" + std::to_string(pick(6)), std::nullopt, pick(2) == 0};
    if (pick(3) != 0) b.row_key = RowKeyOf(pick(11)) + (pick(4) == 0 ? "5" : "");
    return b;
  };
  std::vector<ScanRequest> requests(150);
  for (ScanRequest& req : requests) {
    if (pick(4) == 0) {
      req.ranges.clear();
      for (int p = 0; p < 6; ++p) {
        if (pick(2) == 0) continue;
        KeyBound whole{"p" + std::to_string(p), std::nullopt, true};
        req.ranges.push_back(KeyRange{whole, whole});
      }
    } else {
      KeyRange r{bound(), bound()};
      if (pick(2) == 0 && r.lower && r.upper) r.upper->partition_key = r.lower->partition_key;
      req.ranges = {r};
    }
    if (pick(3) == 0) req.start = EntityKey{"p" + std::to_string(pick(6)), RowKeyOf(pick(11))};
    req.limit = pick(2) == 0 ? SIZE_MAX : 1 + pick(30);
    if (pick(4) == 0) req.predicate = [](const Entity& e) { return e.Find("n")->int32() % 3 == 0; };
  }
  struct Page {
    std::vector<std::string> keys;
    std::optional<EntityKey> next;
    bool operator==(const Page&) const = default;
  };
  auto read = [&](const ScanRequest& req, bool hand_over) {
    Page page;
    Status s = store->ScanRows(
        "acct", "t", req,
        [&](EntityRow& row) {
          page.keys.push_back(std::string(row.partition_key) + "/" + std::string(row.row_key));
          // Returns once a reader waits: the scan hands over before its next
          // row (at once after its first, later after its minimum turn).
          while (hand_over && store->GetStats().writer_waiters == 0) std::this_thread::yield();
          return Status::Ok();
        },
        &page.next);
    REQUIRE(s.ok());
    return page;
  };
  std::vector<Page> alone;
  for (const ScanRequest& req : requests) alone.push_back(read(req, false));

  // A reader that always waits for the connection again once it has read.
  std::atomic<bool> stop{false};
  std::atomic<int> failed_reads{0};
  std::thread reader([&] {
    while (!stop) {
      if (!store->GetEntity("acct", "t", "p2", RowKeyOf(5)).ok()) ++failed_reads;
    }
  });
  const uint64_t before = store->GetStats().scan_handovers;
  size_t continued = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    Page page = read(requests[i], true);
    if (!page.keys.empty()) ++continued;
    CHECK_MESSAGE(page == alone[i], "request " << i);
  }
  stop = true;
  reader.join();
  CHECK(failed_reads == 0);
  // At least one hand-over in each scan that visited a row.
  CHECK(store->GetStats().scan_handovers - before >= continued);
}

TEST_CASE("store(memory): scans take turns on the connection") {
  TempDir dir;
  auto store = OpenStore<MemoryBackend>(dir);
  REQUIRE(store->CreateTable("acct", "t").ok());
  InsertRows(*store, "t", "p", 0, 2000);
  // A long scan meets a short one at its first row; with turns, the short
  // one completes while the long one still has most of its rows to read
  // (each of its rows waits up to 1 ms for the short one, so the long one
  // lasts its turn many times over).
  std::mutex mu;
  std::condition_variable cv;
  bool short_done = false;
  Status short_status;
  size_t rows = 0, rows_when_done = 0;
  std::unique_ptr<Background> other;
  ScanRequest req;
  req.limit = SIZE_MAX;
  std::optional<EntityKey> next;
  Status s = store->ScanRows(
      "acct", "t", req,
      [&](EntityRow&) {
        ++rows;
        if (rows == 1) {
          other = std::make_unique<Background>([&] {
            ScanRequest first;
            first.limit = 10;
            ScanResult result;
            Status st = store->Scan("acct", "t", first, &result);
            std::lock_guard<std::mutex> lock(mu);
            short_status = st;
            short_done = true;
            cv.notify_all();
          });
          while (store->GetStats().writer_waiters == 0) std::this_thread::yield();
        }
        std::unique_lock<std::mutex> lock(mu);
        if (rows_when_done == 0 &&
            cv.wait_for(lock, std::chrono::milliseconds(1), [&] { return short_done; })) {
          rows_when_done = rows;
        }
        return Status::Ok();
      },
      &next);
  REQUIRE(s.ok());
  other->Wait();
  CHECK(rows == 2000);
  CHECK(short_status.ok());
  CHECK(rows_when_done > 0);
  CHECK(rows_when_done < 1000);
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

}  // namespace
}  // namespace cerulean::storage
