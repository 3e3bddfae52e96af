#include "storage/sqlite/wal_checkpoint.h"

namespace cerulean::storage {

WalAction WalCheckpointPlanner::AfterCommit(int pages, const BackgroundCheckpoint& background) {
  // Frames only grow between rewinds, and a rewound WAL holds just the
  // frames of the commit that rewound it.
  if (pages < last_pages_) ++generation_;
  last_pages_ = pages;
  if (pages >= limits_.hard_limit_pages) return WalAction::kCopyInWriter;
  if (pages < limits_.trigger_pages) return WalAction::kNone;
  // One pass at a time: a commit during one looks again at the next.
  if (background.busy) return WalAction::kNone;
  // Once per generation: if the writer's copy did not rewind the WAL (a
  // reader still held an old snapshot), the checkpointer takes over again.
  if (caught_up_generation_ != generation_ && background.copied_generation == generation_ &&
      pages - background.copied <= limits_.catch_up_pages) {
    caught_up_generation_ = generation_;
    return WalAction::kCopyInWriter;
  }
  return WalAction::kStartBackground;
}

void WalCheckpointPlanner::WalReset() {
  ++generation_;
  last_pages_ = 0;
}

}  // namespace cerulean::storage
