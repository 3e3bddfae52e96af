#include "storage/sqlite/wal_checkpoint.h"

#include <doctest/doctest.h>

namespace cerulean::storage {
namespace {

constexpr WalCheckpointLimits kLimits{100, 200, 10};

BackgroundCheckpoint Idle() { return {}; }
BackgroundCheckpoint Busy() { return {true, -1, -1}; }
BackgroundCheckpoint Copied(int64_t generation, int frames) { return {false, generation, frames}; }

TEST_CASE("wal checkpoint: nothing below the trigger, the checkpointer past it") {
  WalCheckpointPlanner planner(kLimits);
  CHECK(planner.AfterCommit(50, Idle()) == WalAction::kNone);
  CHECK(planner.AfterCommit(99, Idle()) == WalAction::kNone);
  CHECK(planner.AfterCommit(100, Idle()) == WalAction::kStartBackground);
  // While a pass is pending or running, commits start no other.
  CHECK(planner.AfterCommit(105, Busy()) == WalAction::kNone);
  CHECK(planner.generation() == 0);
}

TEST_CASE("wal checkpoint: the writer copies the last few commits once the pass is done") {
  WalCheckpointPlanner planner(kLimits);
  REQUIRE(planner.AfterCommit(120, Idle()) == WalAction::kStartBackground);
  // The pass copied 120 frames; two more commits came meanwhile.
  CHECK(planner.AfterCommit(130, Copied(0, 120)) == WalAction::kCopyInWriter);
  // The WAL rewinds at the next write: a new generation, back below the trigger.
  CHECK(planner.AfterCommit(4, Copied(0, 120)) == WalAction::kNone);
  CHECK(planner.generation() == 1);
}

TEST_CASE("wal checkpoint: too far behind, the checkpointer makes another pass") {
  WalCheckpointPlanner planner(kLimits);
  REQUIRE(planner.AfterCommit(100, Idle()) == WalAction::kStartBackground);
  CHECK(planner.AfterCommit(140, Copied(0, 100)) == WalAction::kStartBackground);
  CHECK(planner.AfterCommit(145, Copied(0, 140)) == WalAction::kCopyInWriter);
}

TEST_CASE("wal checkpoint: a pass counted in an earlier generation is not taken for this one") {
  WalCheckpointPlanner planner(kLimits);
  REQUIRE(planner.AfterCommit(150, Idle()) == WalAction::kStartBackground);
  REQUIRE(planner.AfterCommit(155, Copied(0, 150)) == WalAction::kCopyInWriter);
  REQUIRE(planner.AfterCommit(3, Copied(0, 150)) == WalAction::kNone);  // rewound
  // Generation 1 grows past the trigger; 150 frames of generation 0 say
  // nothing about its frames, which are all still to copy.
  CHECK(planner.AfterCommit(152, Copied(0, 150)) == WalAction::kStartBackground);
  CHECK(planner.AfterCommit(160, Copied(1, 152)) == WalAction::kCopyInWriter);
}

TEST_CASE("wal checkpoint: a truncated WAL starts a new generation, whatever the next commit") {
  WalCheckpointPlanner planner(kLimits);
  REQUIRE(planner.AfterCommit(150, Idle()) == WalAction::kStartBackground);
  // The checkpointer copied all 150 frames and truncated the WAL; the next
  // commit is larger than the WAL was, so its size alone shows no rewind.
  planner.WalReset();
  CHECK(planner.generation() == 1);
  CHECK(planner.AfterCommit(155, Copied(0, 150)) == WalAction::kStartBackground);
  CHECK(planner.generation() == 1);
  CHECK(planner.AfterCommit(160, Copied(1, 155)) == WalAction::kCopyInWriter);
}

TEST_CASE("wal checkpoint: one writer copy per generation, then the checkpointer again") {
  // A reader holding an old snapshot kept the writer's copy from rewinding
  // the WAL: the writer does not copy again at every commit.
  WalCheckpointPlanner planner(kLimits);
  REQUIRE(planner.AfterCommit(100, Idle()) == WalAction::kStartBackground);
  REQUIRE(planner.AfterCommit(105, Copied(0, 100)) == WalAction::kCopyInWriter);
  CHECK(planner.AfterCommit(110, Copied(0, 100)) == WalAction::kStartBackground);
  CHECK(planner.AfterCommit(115, Copied(0, 110)) == WalAction::kStartBackground);
  CHECK(planner.generation() == 0);
}

TEST_CASE("wal checkpoint: past the hard limit the writer copies, busy checkpointer or not") {
  WalCheckpointPlanner planner(kLimits);
  CHECK(planner.AfterCommit(200, Busy()) == WalAction::kCopyInWriter);
  CHECK(planner.AfterCommit(250, Idle()) == WalAction::kCopyInWriter);
}

}  // namespace
}  // namespace cerulean::storage
