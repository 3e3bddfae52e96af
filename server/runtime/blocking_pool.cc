#include "server/runtime/blocking_pool.h"

#include <algorithm>

namespace cerulean::server {

namespace {
constexpr size_t kMinThreads = 2;
}  // namespace

BlockingPool::BlockingPool(size_t initial, size_t max)
    : pool_(std::max(initial, kMinThreads)),
      max_(std::max(max, std::max(initial, kMinThreads))),
      threads_(std::max(initial, kMinThreads)) {}

BlockingPool::~BlockingPool() { Join(); }

void BlockingPool::GrowIfBusy() {
  if (pending_.load(std::memory_order_relaxed) <= threads() || threads() >= max_) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (joined_ || threads() >= max_ || pending_.load(std::memory_order_relaxed) <= threads()) {
    return;
  }
  threads_.fetch_add(1, std::memory_order_relaxed);
  // Runs the pool's work until the pool stops (Join).
  added_.emplace_back([this] { pool_.attach(); });
}

void BlockingPool::Join() {
  std::vector<std::thread> added;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (joined_) return;
    joined_ = true;
    added.swap(added_);
  }
  // Once the work posted is done the pool's scheduler stops, and with it
  // the threads attached to it.
  pool_.join();
  for (auto& t : added) t.join();
}

}  // namespace cerulean::server
