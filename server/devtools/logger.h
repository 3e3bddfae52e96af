// Access log (one line per request on stdout unless silent) and the debug
// log (--debug FILE: full headers and query plans).
// Thread-safety: all methods may be called concurrently.
#pragma once

#include <cstdio>
#include <mutex>
#include <string>
#include <string_view>

#include "server/protocol/request.h"

namespace cerulean::server {

class Logger {
 public:
  // `debug_path` empty: no debug log. Returns false if it cannot be opened.
  bool Open(bool access_log, bool json, const std::string& debug_path);
  ~Logger();

  void Access(const Request& req, const HttpResponse& res, double ms);
  // A free-form debug line (e.g. a query plan), tagged with the request id.
  void Debug(const Request& req, std::string_view what);
  bool debug_enabled() const { return debug_ != nullptr; }

 private:
  bool access_ = true;
  bool json_ = false;
  std::FILE* debug_ = nullptr;
  std::mutex mu_;
};

}  // namespace cerulean::server
