#include "server/http/throttled_log.h"

#include <cstdio>

namespace cerulean::server {

void ThrottledLog::Log(const std::string& line) {
  auto now = std::chrono::steady_clock::now();
  size_t dropped;
  {
    std::lock_guard lock(mu_);
    if (now < next_) {
      ++dropped_;
      return;
    }
    next_ = now + interval_;
    dropped = dropped_;
    dropped_ = 0;
  }
  if (dropped > 0) {
    std::fprintf(stderr, "cerulean: %s (and %zu more like it)\n", line.c_str(), dropped);
  } else {
    std::fprintf(stderr, "cerulean: %s\n", line.c_str());
  }
}

}  // namespace cerulean::server
