// The pool where requests that may block on storage run
// (ServerContext::blocking_pool): queries answered off the I/O threads and
// the pages rendered ahead of their request.
//
// It starts with a few threads and adds one whenever work is posted while
// every thread has work, up to a maximum. Creating them all before
// listening would delay the listening socket (each thread's stack mapping
// and first page faults), and most runs never need more than a few.
//
// Thread-safety: Post may be called from any thread, also from work running
// in the pool. Join once, after the last Post that must run.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdio>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace cerulean::server {

class BlockingPool {
 public:
  // REQUIRES: initial <= max. At least two threads start.
  BlockingPool(size_t initial, size_t max);
  ~BlockingPool();

  BlockingPool(const BlockingPool&) = delete;
  BlockingPool& operator=(const BlockingPool&) = delete;

  // Runs `f` on a pool thread; adds a thread first if every one has work.
  // An exception from `f` is logged and dropped: it would end the pool
  // thread and the process (`f` owns its request's completion, so the
  // connection waiting for it is closed when `f` is destroyed). After
  // Join, `f` is destroyed without running.
  template <class F>
  void Post(F&& f) {
    Enqueue(std::make_unique<Work<std::decay_t<F>>>(std::forward<F>(f)));
  }

  // Waits until the posted work has run (work it posts included) and every
  // thread has exited.
  void Join();

  // Threads started so far.
  size_t threads() const;

 private:
  struct Task {
    virtual ~Task() = default;
    virtual void Run() = 0;
  };
  template <class F>
  struct Work final : Task {
    explicit Work(F&& fn) : f(std::move(fn)) {}
    explicit Work(const F& fn) : f(fn) {}
    void Run() override { f(); }
    F f;
  };

  void Enqueue(std::unique_ptr<Task> task);
  // A pool thread: runs tasks until the pool is joined and has none left.
  void Loop();
  // Adds a thread. REQUIRES: mu_ held.
  void StartThreadLocked();

  const size_t max_;
  mutable std::mutex mu_;
  std::condition_variable work_ready_;
  std::deque<std::unique_ptr<Task>> queue_;  // guarded by mu_
  size_t running_ = 0;                       // tasks being run; guarded by mu_
  std::vector<std::thread> threads_;         // guarded by mu_
  bool joined_ = false;                      // guarded by mu_
  bool stopped_ = false;                     // every thread has exited; guarded by mu_
};

}  // namespace cerulean::server
