// SqliteStore: background WAL checkpoints of a file store. The writer's
// commits only append to the WAL; OnWalCommit asks WalCheckpointPlanner
// (wal_checkpoint.h) after each commit who copies the WAL back into the
// database, and CheckpointLoop runs the checkpointer thread's passes.
#include "storage/sqlite/sqlite_internal.h"

namespace cerulean::storage {

int SqliteStore::OnWalCommit(void* store, sqlite3* db, const char*, int pages) {
  auto* self = static_cast<SqliteStore*>(store);
  const int64_t generation_before = self->wal_planner_.generation();
  WalAction action;
  {
    std::lock_guard<std::mutex> lock(self->checkpoint_mu_);
    BackgroundCheckpoint background = self->checkpoint_last_;
    background.busy = self->checkpoint_pending_ || self->checkpoint_running_;
    action = self->wal_planner_.AfterCommit(pages, background);
    self->checkpoint_wal_pages_ = pages;
    self->checkpoint_wal_generation_ = self->wal_planner_.generation();
    ++self->checkpoint_commits_;
    if (action == WalAction::kStartBackground) {
      self->checkpoint_pending_ = true;
      self->checkpoint_generation_ = self->wal_planner_.generation();
    }
  }
  if (self->wal_planner_.generation() != generation_before) {
    self->wal_rewinds_.fetch_add(1, std::memory_order_relaxed);
  }
  if (action == WalAction::kStartBackground) {
    self->checkpoint_cv_.notify_one();
  } else if (action == WalAction::kCopyInWriter) {
    self->checkpoints_writer_.fetch_add(1, std::memory_order_relaxed);
    int log_pages = 0, copied = 0;
    static_cast<void>(
        sqlite3_wal_checkpoint_v2(db, nullptr, SQLITE_CHECKPOINT_PASSIVE, &log_pages, &copied));
  }
  return SQLITE_OK;
}

void SqliteStore::CheckpointLoop() {
  NameThisThread("cerulean-ckpt");
  std::unique_lock<std::mutex> lock(checkpoint_mu_);
  while (true) {
    checkpoint_cv_.wait(lock, [this] { return checkpoint_stopping_ || checkpoint_pending_; });
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

bool SqliteStore::CheckpointerIdleForTesting() {
  std::lock_guard<std::mutex> lock(checkpoint_mu_);
  return !checkpoint_pending_ && !checkpoint_running_ && !checkpoint_idle_wait_;
}

}  // namespace cerulean::storage
