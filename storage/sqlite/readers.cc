// SqliteStore: the reader connections of a file store (a general pool and
// the point readers) and ReadLease, which lends them out (in memory, the one
// connection, handed over between the rows of a scan).
#include <algorithm>

#include "storage/sqlite/sqlite_internal.h"

namespace cerulean::storage {

Status SqliteStore::OpenReader(int64_t cache_bytes, std::unique_ptr<Connection>* out) {
  std::unique_ptr<Connection> reader;
  Status s = Connection::Open(this, options_.path, &reader);
  if (s.ok()) s = reader->Exec("PRAGMA query_only=1");
  // SqliteStoreOptions::reader_mmap_bytes (0, the default: no mapping).
  if (s.ok()) s = reader->Exec("PRAGMA mmap_size=" + std::to_string(options_.reader_mmap_bytes));
  if (s.ok() && cache_bytes > 0) s = reader->Exec(CacheSizePragma(cache_bytes));
  if (s.ok()) *out = std::move(reader);
  return s;
}

SqliteStore::ReadLease::ReadLease(SqliteStore* store, Kind kind) : store_(store) {
  if (store_->options_.in_memory) {
    if (kind == kScan) wait_ = WriterWait::kScan;
    writer_lock_ = store_->LockWriter(wait_);
    conn_ = store_->writer_.get();
    if (kind == kScan || kind == kShortScan) turn_start_ = std::chrono::steady_clock::now();
    return;
  }
  const SqliteStoreOptions& options = store_->options_;
  std::unique_lock<std::mutex> lock(store_->readers_mu_);
  if (kind == kPoint || kind == kShortScan) {
    if (!store_->idle_point_readers_.empty()) {
      reader_ = std::move(store_->idle_point_readers_.back());
      store_->idle_point_readers_.pop_back();
    } else if (store_->point_readers_opened_ < options.point_reader_count) {
      OpenNew(lock, &store_->point_readers_opened_,
              std::max<int64_t>(1, options.point_reader_cache_bytes));
    }
    point_ = reader_ != nullptr;
  }
  if (reader_ == nullptr && store_->idle_readers_.empty() &&
      store_->readers_opened_ < std::max<size_t>(1, options.reader_pool_size)) {
    OpenNew(lock, &store_->readers_opened_, 0);
  }
  if (reader_ == nullptr) {
    // Init opened one, so one comes back.
    store_->readers_cv_.wait(lock, [this] { return !store_->idle_readers_.empty(); });
    reader_ = std::move(store_->idle_readers_.back());
    store_->idle_readers_.pop_back();
  }
  conn_ = reader_.get();
}

SqliteStore::ReadLease::~ReadLease() {
  conn_->RollbackIfActive();
  if (reader_ == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(store_->readers_mu_);
    (point_ ? store_->idle_point_readers_ : store_->idle_readers_).push_back(std::move(reader_));
  }
  // No one waits for a point reader.
  if (!point_) store_->readers_cv_.notify_one();
}

void SqliteStore::ReadLease::HandOver() {
  conn_->RollbackIfActive();
  // Taken while no waiter can take the mutex: the count of takings before
  // this hand-over.
  const uint64_t before = store_->writer_waiters_.load();
  store_->scans_handing_over_.fetch_add(1);
  writer_lock_.unlock();
  // Until a waiter has taken the connection, or none waits any more: locked
  // again at once, the mutex would mostly come straight back to this thread.
  // Every waiter counted takes it eventually, and LockWriter wakes this
  // thread when one does (it reads scans_handing_over_ after its taking is
  // counted; this thread reads the word after raising it).
  for (uint64_t now = store_->writer_waiters_.load();
       (now & kWritersWaitingMask) != 0 && (now >> 32) == (before >> 32);
       now = store_->writer_waiters_.load()) {
    store_->writer_waiters_.wait(now);
  }
  store_->scans_handing_over_.fetch_sub(1);
  store_->scan_handovers_.fetch_add(1, std::memory_order_relaxed);
  writer_lock_ = store_->LockWriter(wait_);
  turn_start_ = std::chrono::steady_clock::now();
  handed_over_ = true;
}

void SqliteStore::ReadLease::OpenNew(std::unique_lock<std::mutex>& lock, size_t* opened,
                                     int64_t cache_bytes) {
  if (store_->reader_open_failed_) return;
  ++*opened;
  lock.unlock();
  std::unique_ptr<Connection> reader;
  const bool ok = store_->OpenReader(cache_bytes, &reader).ok();
  lock.lock();
  if (ok) {
    reader_ = std::move(reader);
  } else {
    --*opened;
    store_->reader_open_failed_ = true;
  }
}

}  // namespace cerulean::storage
