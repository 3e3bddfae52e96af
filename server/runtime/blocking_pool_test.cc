#include "server/runtime/blocking_pool.h"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>

namespace cerulean::server {
namespace {

// Work that holds its thread until Release.
struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  int waiting = 0;

  void Wait() {
    std::unique_lock<std::mutex> lock(mu);
    ++waiting;
    cv.notify_all();
    cv.wait(lock, [this] { return open; });
  }
  // True once `n` pieces of work are waiting at the gate (within 10 s).
  bool AwaitWaiting(int n) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(10), [&] { return waiting >= n; });
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mu);
    open = true;
    cv.notify_all();
  }
};

TEST_CASE("BlockingPool: starts small and adds a thread whenever every one has work") {
  BlockingPool pool(2, 6);
  CHECK(pool.threads() == 2);
  Gate gate;
  for (int i = 0; i < 5; ++i) pool.Post([&] { gate.Wait(); });
  // Five blocked pieces of work, each on its own thread: none waits queued.
  CHECK(gate.AwaitWaiting(5));
  CHECK(pool.threads() == 5);
  gate.Release();
  pool.Join();
}

TEST_CASE("BlockingPool: never more than its maximum; queued work runs once a thread is free") {
  BlockingPool pool(2, 3);
  Gate gate;
  std::atomic<int> ran{0};
  for (int i = 0; i < 3; ++i) {
    pool.Post([&] {
      gate.Wait();
      ++ran;
    });
  }
  CHECK(gate.AwaitWaiting(3));
  for (int i = 0; i < 10; ++i) pool.Post([&] { ++ran; });
  CHECK(pool.threads() == 3);
  CHECK(ran.load() == 0);
  gate.Release();
  pool.Join();
  CHECK(ran.load() == 13);
  CHECK(pool.threads() == 3);
}

TEST_CASE("BlockingPool: work posted from the pool runs before Join returns") {
  std::atomic<int> ran{0};
  {
    BlockingPool pool(2, 4);
    pool.Post([&] {
      pool.Post([&] { ++ran; });
      ++ran;
    });
    pool.Join();
    CHECK(ran.load() == 2);
  }
  CHECK(ran.load() == 2);
}

TEST_CASE("BlockingPool: work that never needs more threads leaves it at its start") {
  BlockingPool pool(2, 32);
  std::atomic<int> ran{0};
  for (int i = 0; i < 100; ++i) {
    pool.Post([&] { ++ran; });
    // One at a time: the previous one has finished before the next is posted.
    while (ran.load() != i + 1) std::this_thread::yield();
  }
  pool.Join();
  CHECK(pool.threads() == 2);
}

}  // namespace
}  // namespace cerulean::server
