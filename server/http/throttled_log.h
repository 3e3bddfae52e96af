// A rate-limited line on stderr, for failures a client could otherwise
// repeat to flood the log (accept errors, connections closed on an
// exception).
// Thread-safety: Log may be called from any thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <mutex>
#include <string>

namespace cerulean::server {

// Writes at most one line per interval to stderr and says how many it
// dropped meanwhile, so that a flood of failures cannot flood the log.
// Thread-safety: Log may be called from any thread.
class ThrottledLog {
 public:
  explicit ThrottledLog(std::chrono::steady_clock::duration interval) : interval_(interval) {}
  void Log(const std::string& line);

 private:
  const std::chrono::steady_clock::duration interval_;
  std::mutex mu_;
  std::chrono::steady_clock::time_point next_{};  // guarded by mu_
  size_t dropped_ = 0;                            // guarded by mu_
};

}  // namespace cerulean::server
