// Tests of ParentWatch (--exitWithParent).
#include "server/parent_watch.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <chrono>

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
  void CloseWriteEnd() {
    if (fds_[1] >= 0) close(fds_[1]);
    fds_[1] = -1;
  }

 private:
  int fds_[2] = {-1, -1};
  int saved_ = -1;
};

}  // namespace

TEST_CASE("ParentWatch posts its callback once stdin ends, not before") {
  PipedStdin in;
  boost::asio::io_context ioc;
  int calls = 0;
  ParentWatch watch(ioc, [&] { ++calls; });
  in.Write("x");  // input is read and ignored
  ioc.run_for(std::chrono::milliseconds(50));
  CHECK(calls == 0);
  ioc.restart();
  in.CloseWriteEnd();
  // Runs until the callback arrives (or a generous bound, which fails the check).
  auto work = boost::asio::make_work_guard(ioc);
  for (int i = 0; i < 500 && calls == 0; ++i) ioc.run_one_for(std::chrono::milliseconds(10));
  CHECK(calls == 1);
}

}  // namespace cerulean::server
