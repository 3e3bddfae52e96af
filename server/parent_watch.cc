#include "server/parent_watch.h"

#include <cerrno>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>

#ifdef _WIN32
#include <windows.h>
#else
#include <unistd.h>
#endif

namespace cerulean::server {

// Owned jointly by the watch and its thread: the thread may outlive the watch.
struct ParentWatch::Shared {
  std::mutex mu;
  std::function<void()> on_end;  // empty once the watch is destroyed
};

namespace {

// Reads standard input until its end (or a read error, which also means no
// parent to read from). The raw handle, not stdio: a thread blocked in stdio's
// fread would hold the FILE lock that exit() may take.
void ReadToEnd() {
  char buffer[256];
#ifdef _WIN32
  HANDLE in = GetStdHandle(STD_INPUT_HANDLE);
  DWORD n = 0;
  while (in != INVALID_HANDLE_VALUE && in != nullptr &&
         ReadFile(in, buffer, sizeof buffer, &n, nullptr) && n > 0) {
  }
#else
  for (;;) {
    ssize_t n = read(STDIN_FILENO, buffer, sizeof buffer);
    if (n > 0 || (n < 0 && errno == EINTR)) continue;
    return;
  }
#endif
}

}  // namespace

ParentWatch::ParentWatch(std::function<void()> on_end) : shared_(std::make_shared<Shared>()) {
  shared_->on_end = std::move(on_end);
  std::thread([shared = shared_] {
    ReadToEnd();
    // Called under the lock, so that the destructor waits for the call.
    std::lock_guard<std::mutex> lock(shared->mu);
    if (shared->on_end) shared->on_end();
  }).detach();
}

ParentWatch::~ParentWatch() {
  std::lock_guard<std::mutex> lock(shared_->mu);
  shared_->on_end = nullptr;
}

}  // namespace cerulean::server
