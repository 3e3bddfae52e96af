#include "server/http/connection_registry.h"

namespace cerulean::server {

Connection::Connection(std::shared_ptr<ConnectionRegistry> registry)
    : registry_(std::move(registry)) {
  registry_->Add(this);
}

Connection::~Connection() { registry_->Remove(this); }

void ConnectionRegistry::Add(Connection* c) {
  std::lock_guard lock(mu_);
  c->index_ = connections_.size();
  connections_.push_back(c);
  count_.store(connections_.size(), std::memory_order_relaxed);
}

void ConnectionRegistry::Remove(Connection* c) {
  std::lock_guard lock(mu_);
  const size_t index = c->index_;
  connections_[index] = connections_.back();
  connections_[index]->index_ = index;
  connections_.pop_back();
  count_.store(connections_.size(), std::memory_order_relaxed);
}

bool ConnectionRegistry::EvictLongestWaiting() {
  std::shared_ptr<Connection> victim;
  {
    std::lock_guard lock(mu_);
    Connection* oldest = nullptr;
    std::int64_t oldest_since = 0;
    bool oldest_writes = false;
    const std::int64_t stalled_before = CoarseNowMs() - kStalledWriteMs;
    for (Connection* c : connections_) {
      std::int64_t since = c->waiting_since_ms_.load(std::memory_order_relaxed);
      bool writes = false;
      if (since <= 0) {
        since = c->writing_since_ms_.load(std::memory_order_relaxed);
        if (since > stalled_before) continue;
        writes = true;
      }
      if (since > 0 && (oldest == nullptr || since < oldest_since)) {
        oldest = c;
        oldest_since = since;
        oldest_writes = writes;
      }
    }
    if (oldest == nullptr) return false;
    // Marked: the next eviction picks another one, and Evict() closes the
    // connection only if it has not started answering a request (or
    // finished writing its answer) since.
    (oldest_writes ? oldest->writing_since_ms_ : oldest->waiting_since_ms_)
        .store(Connection::kEvicted, std::memory_order_relaxed);
    victim = oldest->Share();
  }
  // Outside the lock: dropping `victim` may destroy the connection, which
  // takes the lock.
  if (victim) victim->Evict();
  return true;
}

}  // namespace cerulean::server
