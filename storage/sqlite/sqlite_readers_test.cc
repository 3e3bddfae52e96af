// The file store's reader connections: a pool beside the writer, point
// readers, opened as reads need them.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
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
