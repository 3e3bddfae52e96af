// Tests of ParentWatch (--exitWithParent).
#include "server/parent_watch.h"

#include <doctest/doctest.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace cerulean::server {

namespace {

// Makes the read end of a new pipe this process's stdin for the test's life; the test holds
// the write end, as a parent would.
class PipedStdin {
 public:
  PipedStdin() {
    REQUIRE(pipe(fds_) == 0);
    saved_ = dup(STDIN_FILENO);
    REQUIRE(dup2(fds_[0], STDIN_FILENO) == STDIN_FILENO);
    close(fds_[0]);
  }
  ~PipedStdin() {
    CloseWriteEnd();
    dup2(saved_, STDIN_FILENO);
    close(saved_);
  }
  void Write(const char* text) { REQUIRE(write(fds_[1], text, 1) == 1); }
  // True iff every byte written has been read from stdin, within `bound`.
  bool Drained(std::chrono::milliseconds bound) {
    const auto deadline = std::chrono::steady_clock::now() + bound;
    int unread = 0;
    while (ioctl(STDIN_FILENO, FIONREAD, &unread) == 0 && unread > 0) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::yield();
    }
    return unread == 0;
  }
  void CloseWriteEnd() {
    if (fds_[1] >= 0) close(fds_[1]);
    fds_[1] = -1;
  }

 private:
  int fds_[2] = {-1, -1};
  int saved_ = -1;
};

}  // namespace

TEST_CASE("ParentWatch calls its callback once stdin ends, not before") {
  PipedStdin in;
  std::mutex mu;
  std::condition_variable called;
  int calls = 0;
  ParentWatch watch([&] {
    std::lock_guard<std::mutex> lock(mu);
    ++calls;
    called.notify_all();
  });
  // Input is read and ignored: once the watch has read it, no call.
  in.Write("x");
  REQUIRE(in.Drained(std::chrono::seconds(10)));
  {
    std::lock_guard<std::mutex> lock(mu);
    CHECK(calls == 0);
  }
  in.CloseWriteEnd();
  // A generous bound, which fails the check if the call never comes.
  std::unique_lock<std::mutex> lock(mu);
  CHECK(called.wait_for(lock, std::chrono::seconds(10), [&] { return calls > 0; }));
  CHECK(calls == 1);
}

}  // namespace cerulean::server
