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

#include <atomic>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <cstddef>
#include <cstdio>
#include <exception>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace cerulean::server {

class BlockingPool {
 public:
  // REQUIRES: initial <= max. At least two threads start (Asio treats a
  // pool of one as single-threaded, and this one grows).
  BlockingPool(size_t initial, size_t max);
  ~BlockingPool();

  BlockingPool(const BlockingPool&) = delete;
  BlockingPool& operator=(const BlockingPool&) = delete;

  // Runs `f` on a pool thread; adds a thread first if every one has work.
  // An exception from `f` is logged and dropped: it would end the pool
  // thread and the process (`f` owns its request's completion, so the
  // connection waiting for it is closed when `f` is destroyed).
  template <class F>
  void Post(F&& f) {
    pending_.fetch_add(1, std::memory_order_relaxed);
    boost::asio::post(pool_, [this, f = std::forward<F>(f)]() mutable {
      struct Finished {
        std::atomic<size_t>* pending;
        ~Finished() { pending->fetch_sub(1, std::memory_order_relaxed); }
      } finished{&pending_};
      try {
        f();
      } catch (const std::exception& e) {
        std::fprintf(stderr, "cerulean: exception in blocking work: %s\n", e.what());
      } catch (...) {
        std::fprintf(stderr, "cerulean: exception in blocking work\n");
      }
    });
    GrowIfBusy();
  }

  // Waits until the posted work has run and every thread has exited.
  void Join();

  // Threads started so far.
  size_t threads() const { return threads_.load(std::memory_order_relaxed); }

 private:
  void GrowIfBusy();

  boost::asio::thread_pool pool_;
  const size_t max_;
  std::atomic<size_t> pending_{0};  // posted and not finished (queued or running)
  std::atomic<size_t> threads_;
  std::mutex mu_;
  std::vector<std::thread> added_;  // guarded by mu_
  bool joined_ = false;             // guarded by mu_
};

}  // namespace cerulean::server
