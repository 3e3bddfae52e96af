// SqliteStore: background WAL checkpoints of a file store. The writer's
// commits only append to the WAL; OnWalCommit asks WalCheckpointPlanner
// (wal_checkpoint.h) after each commit who copies the WAL back into the
// database, and CheckpointLoop runs the checkpointer thread's passes and,
// once writes have stopped, truncates the WAL (TruncateIdleWal).
#include <algorithm>

#include "storage/sqlite/sqlite_internal.h"

namespace cerulean::storage {

int SqliteStore::OnWalCommit(void* store, sqlite3* db, const char*, int pages) {
  auto* self = static_cast<SqliteStore*>(store);
  const int64_t generation_before = self->wal_planner_.generation();
  WalAction action;
  bool wake_for_truncation = false;
  {
    std::lock_guard<std::mutex> lock(self->checkpoint_mu_);
    BackgroundCheckpoint background = self->checkpoint_last_;
    background.busy = self->checkpoint_pending_ || self->checkpoint_running_;
    action = self->wal_planner_.AfterCommit(pages, background);
    self->checkpoint_wal_pages_ = pages;
    self->checkpoint_wal_generation_ = self->wal_planner_.generation();
    ++self->checkpoint_commits_;
    self->checkpoint_last_commit_ = std::chrono::steady_clock::now();
    // The first commit since a truncation has the checkpointer count the
    // idle period towards the next one (CheckpointLoop).
    wake_for_truncation = !self->checkpoint_wal_dirty_;
    self->checkpoint_wal_dirty_ = true;
    if (action == WalAction::kStartBackground) {
      self->checkpoint_pending_ = true;
      self->checkpoint_generation_ = self->wal_planner_.generation();
    }
  }
  if (self->wal_planner_.generation() != generation_before) {
    self->wal_rewinds_.fetch_add(1, std::memory_order_relaxed);
  }
  if (action == WalAction::kStartBackground || wake_for_truncation) {
    self->checkpoint_cv_.notify_one();
  }
  if (action == WalAction::kCopyInWriter) {
    self->checkpoints_writer_.fetch_add(1, std::memory_order_relaxed);
    int log_pages = 0, copied = 0;
    static_cast<void>(
        sqlite3_wal_checkpoint_v2(db, nullptr, SQLITE_CHECKPOINT_PASSIVE, &log_pages, &copied));
  }
  return SQLITE_OK;
}

void SqliteStore::CheckpointLoop() {
  NameThisThread("cerulean-ckpt");
  const bool truncate = options_.wal_truncate_idle_after.count() > 0;
  // A truncation given up because a reader still read from the WAL is
  // tried again one idle period later, not at once.
  std::chrono::steady_clock::time_point refused_at{};
  std::unique_lock<std::mutex> lock(checkpoint_mu_);
  while (true) {
    if (truncate && checkpoint_wal_dirty_ && !checkpoint_pending_ && !checkpoint_stopping_) {
      const auto last_commit = checkpoint_last_commit_;
      const auto due = std::max(last_commit, refused_at) + options_.wal_truncate_idle_after;
      if (!checkpoint_cv_.wait_until(lock, due, [&] {
            return checkpoint_stopping_ || checkpoint_pending_ ||
                   checkpoint_last_commit_ != last_commit;
          })) {
        if (!TruncateIdleWal(lock)) refused_at = std::chrono::steady_clock::now();
      }
      continue;
    }
    checkpoint_cv_.wait(lock, [&] {
      return checkpoint_stopping_ || checkpoint_pending_ || (truncate && checkpoint_wal_dirty_);
    });
    if (!checkpoint_pending_ && !checkpoint_stopping_) continue;  // to wait for the idle period
    if (checkpoint_stopping_) return;
    checkpoint_pending_ = false;
    checkpoint_running_ = true;
    const int64_t generation = checkpoint_generation_;
    lock.unlock();
    // PASSIVE: copies what no reader still needs, never waits for locks. A
    // failure (e.g. SQLITE_BUSY) is retried at the next trigger.
    int log_pages = 0, copied = 0;
    const int rc = sqlite3_wal_checkpoint_v2(checkpointer_conn_->db, nullptr,
                                             SQLITE_CHECKPOINT_PASSIVE, &log_pages, &copied);
    checkpoints_background_.fetch_add(1, std::memory_order_relaxed);
    lock.lock();
    checkpoint_running_ = false;
    if (rc != SQLITE_OK || copied < 0) continue;
    const bool progressed =
        checkpoint_last_.copied_generation != generation || copied > checkpoint_last_.copied;
    checkpoint_last_.copied = copied;
    checkpoint_last_.copied_generation = generation;
    // Frames committed during the pass are left for the next one, which a
    // commit asks for (or the writer copies them: wal_checkpoint.h). When
    // writes stop, no commit comes, and the frames a bulk load left would
    // wait for the next write (a Delete Table, say), which would copy them
    // on its request path. So once no commit has come for a moment, the
    // checkpointer copies them. Not again if the pass
    // copied nothing new (a reader's snapshot holds it back), and not if a
    // commit has already asked for a pass or rewound the WAL.
    if (!progressed || checkpoint_pending_ || checkpoint_wal_generation_ != generation ||
        checkpoint_wal_pages_ <= copied) {
      continue;
    }
    const uint64_t commits = checkpoint_commits_;
    checkpoint_idle_wait_ = true;
    if (!checkpoint_cv_.wait_for(lock, options_.checkpoint_idle_pass_after, [&] {
          return checkpoint_stopping_ || checkpoint_pending_ || checkpoint_commits_ != commits;
        })) {
      checkpoint_pending_ = true;
      checkpoints_idle_.fetch_add(1, std::memory_order_relaxed);
    }
    checkpoint_idle_wait_ = false;
  }
}

bool SqliteStore::TruncateIdleWal(std::unique_lock<std::mutex>& lock) {
  const uint64_t commits = checkpoint_commits_;
  const int64_t generation = checkpoint_wal_generation_;
  lock.unlock();
  sqlite3* db = checkpointer_conn_->db;
  // First what is left to copy, as any pass does: without the writer's
  // mutex, since copying takes as long as there are frames.
  int log_pages = 0, copied = 0;
  int rc = sqlite3_wal_checkpoint_v2(db, nullptr, SQLITE_CHECKPOINT_PASSIVE, &log_pages, &copied);
  bool refused = rc != SQLITE_OK || log_pages < 0 || copied != log_pages;
  bool truncated = false;
  if (!refused) {
    // With writer_mu_ held no commit can come in between, the planner can
    // be told, and the writer connection holds no SQLite lock: TRUNCATE,
    // which copies nothing now, waits for nothing either with no busy
    // timeout. It fails with SQLITE_BUSY while a reader reads from the WAL
    // (a reader that began with the WAL fully copied reads only the
    // database file, and goes on).
    std::lock_guard<std::mutex> writer(writer_mu_);
    lock.lock();
    const bool quiet = checkpoint_commits_ == commits;
    lock.unlock();
    if (quiet) {
      sqlite3_busy_timeout(db, 0);
      rc = sqlite3_wal_checkpoint_v2(db, nullptr, SQLITE_CHECKPOINT_TRUNCATE, &log_pages, &copied);
      sqlite3_busy_timeout(db, static_cast<int>(options_.busy_timeout.count()));
      truncated = rc == SQLITE_OK;
      refused = !truncated;
      if (truncated) wal_planner_.WalReset();
    }
    lock.lock();
    if (truncated) {
      checkpoint_wal_pages_ = 0;
      checkpoint_wal_generation_ = wal_planner_.generation();
      checkpoint_last_ = BackgroundCheckpoint{false, checkpoint_wal_generation_, 0};
      checkpoint_wal_dirty_ = false;
    }
  } else {
    lock.lock();
    // What the pass copied counts as a pass's, unless the WAL was rewound
    // meanwhile (its frames would then be of another generation).
    if (rc == SQLITE_OK && copied >= 0 && checkpoint_wal_generation_ == generation &&
        (checkpoint_last_.copied_generation != generation || copied > checkpoint_last_.copied)) {
      checkpoint_last_.copied = copied;
      checkpoint_last_.copied_generation = generation;
    }
  }
  if (truncated) {
    wal_truncations_.fetch_add(1, std::memory_order_relaxed);
  } else if (refused) {
    wal_truncations_refused_.fetch_add(1, std::memory_order_relaxed);
  }
  return truncated;
}

bool SqliteStore::CheckpointerIdleForTesting() {
  std::lock_guard<std::mutex> lock(checkpoint_mu_);
  return !checkpoint_pending_ && !checkpoint_running_ && !checkpoint_idle_wait_;
}

}  // namespace cerulean::storage
