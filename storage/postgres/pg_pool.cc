#include "storage/postgres/pg_pool.h"

#include <algorithm>
#include <string>
#include <utility>

namespace cerulean::storage {

PgPool::PgPool(PgPoolOptions options) : options_(std::move(options)) {}

PgPool::~PgPool() = default;

Status PgPool::Acquire(std::unique_ptr<PgConnection>* out) {
  static const Status kUnreachable = Status::Busy("database unavailable: it does not answer");
  if (!reachable()) return kUnreachable;
  const size_t size = std::max<size_t>(1, options_.size);
  const auto deadline = std::chrono::steady_clock::now() + options_.acquire_timeout;
  std::unique_lock<std::mutex> lock(mu_);
  bool waited = false;
  while (idle_.empty() && open_ >= size) {
    waited = true;
    if (cv_.wait_until(lock, deadline) == std::cv_status::timeout && idle_.empty() &&
        open_ >= size) {
      ++waits_;
      return Status::Busy("database unavailable: no connection came free within " +
                          std::to_string(options_.acquire_timeout.count()) + " ms");
    }
    if (!reachable()) return kUnreachable;
  }
  if (waited) ++waits_;
  if (!idle_.empty()) {
    *out = std::move(idle_.back());
    idle_.pop_back();
    ++in_use_;
    return Status::Ok();
  }
  ++open_;
  lock.unlock();
  PgConnectionOptions o;
  o.schema = options_.schema;
  o.round_trip_timeout = options_.round_trip_timeout;
  o.long_round_trip_timeout = options_.long_round_trip_timeout;
  o.first_host_source = &first_host_;
  o.generation_source = &generation_;
  std::unique_ptr<PgConnection> conn;
  Status s = PgConnection::Open(options_.info, o, &conn);
  if (s.ok()) NoteServingHost(conn->host_index());
  lock.lock();
  if (!s.ok()) {
    --open_;
    cv_.notify_one();
    return s;
  }
  ++in_use_;
  *out = std::move(conn);
  return Status::Ok();
}

void PgPool::Release(std::unique_ptr<PgConnection> conn) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    --in_use_;
    if (conn->Broken() || conn->generation() != generation_.load(std::memory_order_acquire)) {
      --open_;
    } else {
      idle_.push_back(std::move(conn));
    }
  }
  cv_.notify_one();
  // A dropped connection closes here, outside the lock.
}

Status PgPool::OpenUnpooled(const std::string& schema, std::chrono::milliseconds round_trip,
                            std::unique_ptr<PgConnection>* out) {
  PgConnectionOptions o;
  o.schema = schema;
  o.round_trip_timeout = round_trip;
  o.long_round_trip_timeout = round_trip;
  o.first_host_source = &first_host_;
  Status s = PgConnection::Open(options_.info, o, out);
  if (s.ok()) NoteServingHost((*out)->host_index());
  return s;
}

void PgPool::NoteServingHost(size_t index) {
  if (index < options_.info.hosts()) first_host_.store(index, std::memory_order_relaxed);
}

void PgPool::NoteSilentHost(size_t index) {
  const size_t n = options_.info.hosts();
  size_t expected = index;
  if (n > 1) first_host_.compare_exchange_strong(expected, (index + 1) % n);
}

void PgPool::SetReachable(bool reachable) {
  reachable_.store(reachable, std::memory_order_release);
  // Waiters for a connection give up at once.
  if (!reachable) cv_.notify_all();
}

void PgPool::Invalidate() {
  generation_.fetch_add(1, std::memory_order_acq_rel);
  std::vector<std::unique_ptr<PgConnection>> dropped;
  {
    std::lock_guard<std::mutex> lock(mu_);
    dropped.swap(idle_);
    open_ -= dropped.size();
  }
  cv_.notify_all();
}

size_t PgPool::open() const {
  std::lock_guard<std::mutex> lock(mu_);
  return open_;
}
size_t PgPool::in_use() const {
  std::lock_guard<std::mutex> lock(mu_);
  return in_use_;
}
uint64_t PgPool::waits() const {
  std::lock_guard<std::mutex> lock(mu_);
  return waits_;
}

}  // namespace cerulean::storage
