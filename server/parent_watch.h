// ParentWatch: stops the server when the process that started it goes
// (--exitWithParent). A thread reads standard input to its end, which comes
// when every write end of the pipe is closed: the parent closed it, or died
// however it died (SIGKILL included). Unlike PR_SET_PDEATHSIG, which only
// Linux has, this works wherever pipes do (POSIX and Windows).
// Thread-safety: construct and destroy on one thread; `on_end` runs on the
// watch's own thread.
#pragma once

#include <functional>
#include <memory>

namespace cerulean::server {

class ParentWatch {
 public:
  // Starts the reading thread; at the end of standard input it calls
  // `on_end` (once, on that thread), unless this watch was destroyed first.
  // `on_end` should return soon: it hands the shutdown to the server
  // (HttpServer::RequestShutdown).
  explicit ParentWatch(std::function<void()> on_end);
  // Waits for a call of `on_end` in progress; after this returns there is
  // none. The thread, blocked in a read, is left to end with the process.
  ~ParentWatch();

  ParentWatch(const ParentWatch&) = delete;
  ParentWatch& operator=(const ParentWatch&) = delete;

 private:
  struct Shared;
  std::shared_ptr<Shared> shared_;
};

}  // namespace cerulean::server
