// kill -9 rounds: a child process writes through a file SqliteStore and
// reports each acknowledged Apply over a pipe; the parent kills it at a
// random moment, reopens the database and checks that every acknowledged
// write is there, complete (batches are atomic).
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "storage/sqlite_store.h"
#include "storage/test_util.h"

namespace cerulean::storage {
namespace {

using test::Insert;
using test::Op;
using test::TempDir;

constexpr int kOpsPerBatch = 3;

std::string RowKey(int32_t seq, int j) { return std::to_string(seq) + "." + std::to_string(j); }

// The child: writes batches forever, acknowledging each one after Apply
// returned. Never returns.
[[noreturn]] void RunWriter(const std::string& path, int round, int ack_fd) {
  SqliteStoreOptions options;
  options.path = path;
  auto store = SqliteStore::Open(options);
  if (!store.ok()) _exit(2);
  Status s = (*store)->CreateTable("acct", "crash");
  if (!s.ok() && s.code() != StatusCode::kTableAlreadyExists) _exit(3);
  std::string pk = "round" + std::to_string(round);
  for (int32_t seq = 0;; ++seq) {
    std::vector<WriteOp> ops;
    for (int j = 0; j < kOpsPerBatch; ++j) {
      ops.push_back(
          Insert(pk, RowKey(seq, j),
                 {{"seq", Value::Int32(seq)}, {"pad", Value::String(std::string(200, 'z'))}}));
    }
    // Rewrite an older entity too, so pages are updated in place as well.
    if (seq > 0) {
      ops.push_back(
          Op(WriteKind::kMerge, pk, RowKey(seq - 1, 0), {{"touched", Value::Boolean(true)}}));
    }
    if (!(*store)->Apply("acct", "crash", ops, nullptr, nullptr).ok()) _exit(4);
    if (write(ack_fd, &seq, sizeof seq) != static_cast<ssize_t>(sizeof seq)) _exit(5);
  }
}

TEST_CASE("store(file): every acknowledged write survives kill -9") {
  TempDir dir;
  REQUIRE_FALSE(dir.path().empty());
  const std::string path = dir.path() + "/crash.db";
  unsigned seed = static_cast<unsigned>(std::random_device{}());
  MESSAGE("seed " << seed);
  std::mt19937 rng(seed);

  for (int round = 0; round < 4; ++round) {
    CAPTURE(round);
    int fds[2];
    REQUIRE(pipe(fds) == 0);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      close(fds[0]);
      RunWriter(path, round, fds[1]);
    }
    close(fds[1]);

    // Let the child get some writes acknowledged, then kill it mid-stream.
    const int min_acks = 50 + static_cast<int>(rng() % 200);
    std::set<int32_t> acked;
    int32_t seq = 0;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (static_cast<int>(acked.size()) < min_acks &&
           std::chrono::steady_clock::now() < deadline) {
      ssize_t n = read(fds[0], &seq, sizeof seq);
      if (n != static_cast<ssize_t>(sizeof seq)) break;
      acked.insert(seq);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % 5000));
    kill(pid, SIGKILL);
    int wstatus = 0;
    REQUIRE(waitpid(pid, &wstatus, 0) == pid);
    CHECK_MESSAGE(WIFSIGNALED(wstatus), "writer exited early with status "
                                            << (WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1));
    // Acknowledgements still in the pipe were sent before the kill.
    ssize_t n;
    while ((n = read(fds[0], &seq, sizeof seq)) == static_cast<ssize_t>(sizeof seq)) {
      acked.insert(seq);
    }
    close(fds[0]);
    REQUIRE(acked.size() >= static_cast<size_t>(min_acks));
    MESSAGE("round " << round << ": " << acked.size() << " acknowledged batches");

    SqliteStoreOptions options;
    options.path = path;
    auto store = SqliteStore::Open(options);
    REQUIRE_MESSAGE(store.ok(), store.status().ToString());
    std::string pk = "round" + std::to_string(round);
    int missing = 0;
    for (int32_t s : acked) {
      for (int j = 0; j < kOpsPerBatch; ++j) {
        auto e = (*store)->GetEntity("acct", "crash", pk, RowKey(s, j));
        if (!e.ok()) {
          ++missing;
          continue;
        }
        CHECK(*e->Find("seq") == Value::Int32(s));
      }
      if (s > 0) {
        auto prev = (*store)->GetEntity("acct", "crash", pk, RowKey(s - 1, 0));
        if (!prev.ok() || prev->Find("touched") == nullptr) ++missing;
      }
    }
    CHECK(missing == 0);
    // Batches are all-or-nothing: every batch present is complete.
    ScanRequest req;
    req.ranges = {KeyRange{KeyBound{pk, std::nullopt, true}, KeyBound{pk, std::nullopt, true}}};
    req.limit = SIZE_MAX;
    ScanResult res;
    REQUIRE((*store)->Scan("acct", "crash", req, &res).ok());
    CHECK(res.entities.size() % kOpsPerBatch == 0);
    CHECK(res.entities.size() >= acked.size() * kOpsPerBatch);
  }
}

}  // namespace
}  // namespace cerulean::storage
