#include "server/runtime/blocking_pool.h"

#include <algorithm>

namespace cerulean::server {

namespace {
constexpr size_t kMinThreads = 2;
}  // namespace

BlockingPool::BlockingPool(size_t initial, size_t max)
    : max_(std::max(max, std::max(initial, kMinThreads))) {
  std::lock_guard lock(mu_);
  for (size_t i = 0; i < std::max(initial, kMinThreads); ++i) StartThreadLocked();
}

BlockingPool::~BlockingPool() { Join(); }

size_t BlockingPool::threads() const {
  std::lock_guard lock(mu_);
  return threads_.size();
}

void BlockingPool::StartThreadLocked() {
  threads_.emplace_back([this] { Loop(); });
}

void BlockingPool::Enqueue(std::unique_ptr<Task> task) {
  {
    std::lock_guard lock(mu_);
    if (stopped_) return;  // destroyed without running, once unlocked
    queue_.push_back(std::move(task));
    // Every thread has work (counting this task): one more, up to max_.
    if (queue_.size() + running_ > threads_.size() && threads_.size() < max_ && !joined_) {
      StartThreadLocked();
    }
  }
  work_ready_.notify_one();
}

void BlockingPool::Loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    work_ready_.wait(lock, [this] { return !queue_.empty() || (joined_ && running_ == 0); });
    if (queue_.empty()) {
      // Joined, and no task runs that could post more.
      work_ready_.notify_all();
      return;
    }
    std::unique_ptr<Task> task = std::move(queue_.front());
    queue_.pop_front();
    ++running_;
    lock.unlock();
    try {
      task->Run();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "cerulean: exception in blocking work: %s\n", e.what());
    } catch (...) {
      std::fprintf(stderr, "cerulean: exception in blocking work\n");
    }
    task.reset();  // its captures go before the pool may end
    lock.lock();
    --running_;
    if (joined_ && running_ == 0 && queue_.empty()) work_ready_.notify_all();
  }
}

void BlockingPool::Join() {
  {
    std::lock_guard lock(mu_);
    if (joined_) return;
    joined_ = true;
  }
  work_ready_.notify_all();
  // No thread starts once joined_ is set, so threads_ no longer changes.
  for (auto& t : threads_) t.join();
  std::lock_guard lock(mu_);
  stopped_ = true;
}

}  // namespace cerulean::server
