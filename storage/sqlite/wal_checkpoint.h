// When a file store's WAL is copied back into the database.
//
// The writer connection's commits only append to the WAL; a checkpoint
// copies its frames into the database file, and SQLite rewinds the WAL (the
// next commit writes from its start again) only when a write begins with
// every frame copied. WalCheckpointPlanner decides, after each commit, who
// copies what:
//   * past trigger_pages, the checkpointer thread copies in the background;
//   * when its last pass left at most catch_up_pages frames behind, the
//     writer copies those itself, where no commit can come in between, so
//     the next write rewinds the WAL;
//   * past hard_limit_pages the writer copies whatever is left.
// Left to the checkpointer alone, each pass finds a commit or two more
// behind it: under steady writes the WAL would rewind only after many more
// passes, each syncing the WAL and the database (storage/README.md).
//
// Thread-safety: a planner is used by whoever holds the writer connection,
// one caller at a time; BackgroundCheckpoint is read under the lock that
// guards the checkpointer's state.
#pragma once

#include <cstdint>

namespace cerulean::storage {

// In WAL pages (4 KiB each). The trigger is large enough that a pass copies
// many commits at once, small enough that reads do not search a long WAL
// index. The hard limit stalls the writer for as long as copying the frames
// the checkpointer has not reached yet takes, so a higher limit means longer
// stalls when the writer outruns the checkpointer. A catch-up copies a few
// commits' pages and syncs the WAL and the database once.
struct WalCheckpointLimits {
  int trigger_pages = 4000;
  int hard_limit_pages = 8000;
  int catch_up_pages = 256;
};

// The checkpointer thread's state as the planner needs it.
struct BackgroundCheckpoint {
  bool busy = false;               // a pass is pending or running
  int64_t copied_generation = -1;  // the WAL generation `copied` counts frames of
  int copied = -1;                 // frames copied by the last finished pass
};

enum class WalAction {
  kNone,
  kStartBackground,  // wake the checkpointer, for generation()
  kCopyInWriter,     // checkpoint on the writer connection now
};

class WalCheckpointPlanner {
 public:
  explicit WalCheckpointPlanner(WalCheckpointLimits limits = {}) : limits_(limits) {}

  // After a commit that left the WAL `pages` frames long.
  WalAction AfterCommit(int pages, const BackgroundCheckpoint& background);

  // After another connection truncated the WAL to no frames, with no
  // commit since the last AfterCommit: the next commit starts a new
  // generation from frame 1 whatever its size, which AfterCommit alone would
  // not see when it is at least as large as the WAL was.
  void WalReset();

  // How often the WAL has been rewound (seen as its size falling between
  // commits) or reset; frame counts are comparable only within one
  // generation.
  int64_t generation() const { return generation_; }

 private:
  WalCheckpointLimits limits_;
  int last_pages_ = 0;
  int64_t generation_ = 0;
  int64_t caught_up_generation_ = -1;  // the writer copied the rest in this one
};

}  // namespace cerulean::storage
